#!/usr/bin/env bash
# Checks that every section of docs/DESIGN.md the code and docs cite exists: "DESIGN §N",
# "DESIGN.md §N.M" and the sections listed after one ("§2.4, §4", "§6.3/§10"); and that code
# (Sources, Tests, scripts) cites no issue ("issue 18.2"): an issue is not in the repository and
# its number says nothing to a reader, so a comment says the reason itself or cites DESIGN.
# Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import pathlib, re, sys

design = pathlib.Path("docs/DESIGN.md").read_text()
sections = set(re.findall(r"^#{2,3} ([0-9]+(?:\.[0-9]+)?)\.? ", design, re.M))
citation = re.compile(r"DESIGN(?:\.md)?\)?,?\s+(§[0-9]+(?:\.[0-9]+)?(?:(?:\s*(?:,|/|and|or)\s*)§[0-9]+(?:\.[0-9]+)?)*)")
problems = []
paths = [p for root in ("Sources", "Tests", "scripts", "docs") for p in pathlib.Path(root).rglob("*") if p.is_file()]
paths += [pathlib.Path("README.md")]
for path in paths:
    if path.suffix not in (".swift", ".md", ".sh", ".py", ""):
        continue
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        continue
    if path.parts[0] in ("Sources", "Tests", "scripts") and path.name != "check-citations.sh":
        # A citation a comment's line break split ("(issue" / "/// 18.2)").
        for match in re.finditer(r"(?i)\bissue[ \t]*\n[ \t]*(?:///?|#)[ \t]*[0-9]+", text):
            number = text.count("\n", 0, match.start()) + 1
            problems.append(f"{path}:{number}: cites an issue, which is not in the repository: say the reason, or cite docs/DESIGN.md")
    for number, line in enumerate(text.splitlines(), 1):
        if path.parts[0] in ("Sources", "Tests", "scripts") and path.name != "check-citations.sh" \
                and re.search(r"\bissue [0-9]+", line, re.I):
            problems.append(f"{path}:{number}: cites an issue, which is not in the repository: say the reason, or cite docs/DESIGN.md")
        elif re.search(r"issue 9\.[0-9]+", line) and path.name != "check-citations.sh":
            problems.append(f"{path}:{number}: cites \"issue 9.x\", a list not in the repository: cite docs/DESIGN.md instead")
        for match in citation.finditer(line):
            for cited in re.findall(r"§([0-9]+(?:\.[0-9]+)?)", match.group(1)):
                if cited not in sections:
                    problems.append(f"{path}:{number}: cites DESIGN §{cited}, which docs/DESIGN.md does not have")
# Within docs/DESIGN.md itself every "§N" is a citation of its own sections.
for number, line in enumerate(design.splitlines(), 1):
    for cited in re.findall(r"(?<![0-9.])§([0-9]+(?:\.[0-9]+)?)", line):
        if cited not in sections and not re.search(r"RFC [0-9]+ §" + re.escape(cited), line):
            problems.append(f"docs/DESIGN.md:{number}: cites §{cited}, which it does not have")
for problem in problems:
    print(problem, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"citations: every cited section of docs/DESIGN.md exists ({len(sections)} sections)")
PY
