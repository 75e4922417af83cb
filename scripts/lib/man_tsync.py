"""Post-processes the pages the generate-manual plugin wrote (see scripts/generate-docs.sh).

Usage: man_tsync.py DUMP_HELP_JSON MAN_DIRECTORY

tsync.1:
- The root help's discussion ends with the exit-status table (from ExitStatus.table): it is cut
  from DESCRIPTION and written as the EXIT STATUS section, one tagged item per code, in place of
  the plugin's generic `.Ex -std`.
- A COMMANDS section lists each subcommand with its abstract, before EXIT STATUS.

Every other page:
- EXIT STATUS points to the table in tsync(1) instead of the generic "exits >0 if an error occurs".

Every page:
- The title in git's form: `.Dt TSYNC-PUSH 1` (the plugin writes TSYNC.PUSH).
- The options list gets its OPTIONS heading (the plugin appends it to DESCRIPTION).
- No hyphenation, and no line break after a hyphen either, so a JSON field, a class
such as version-conflict or a flag such as --password-stdin is never split across lines (groff's
mdoc turns hyphenation back on at each paragraph from `doc-hyphen-flags`, hence the register).
"""
import glob
import json
import os
import re
import sys

dump_path, man_directory = sys.argv[1], sys.argv[2]
with open(dump_path) as f:
    root = json.load(f)["command"]
page_path = os.path.join(man_directory, "tsync.1")
with open(page_path) as f:
    page = f.read().rstrip("\n") + "\n"


def escape(text):
    return text.replace("\\", "\\e")


# The exit codes: the lines after "EXIT STATUS" in the root discussion, "  CODE  meaning".
discussion = root.get("discussion", "")
codes = []
if "EXIT STATUS" in discussion:
    for line in discussion.split("EXIT STATUS", 1)[1].splitlines():
        match = re.match(r"  (\d+)\s+(.*)", line)
        if match:
            codes.append((match.group(1), match.group(2)))
        elif codes and line.strip():
            # A continuation line of the previous meaning.
            codes[-1] = (codes[-1][0], codes[-1][1] + " " + line.strip())
if not codes:
    sys.exit("man_tsync.py: no EXIT STATUS table in the root discussion")

# Cut the table from DESCRIPTION: from its heading line to the options list (or the next section).
start = page.index("\nEXIT STATUS\n")
end = min(i for i in (page.find("\n.Bl -tag", start), page.find("\n.Sh", start)) if i != -1)
description_end = page[:start].rstrip()
if description_end.endswith(".Pp"):
    description_end = description_end[: -len(".Pp")].rstrip()
page = description_end + page[end:]

exit_section = ".Sh \"EXIT STATUS\"\n.Bl -tag -width 4n\n" + "".join(
    ".It {}\n{}\n".format(code, escape(meaning)) for code, meaning in codes
) + ".El\n"
commands = [c for c in root.get("subcommands", []) if c.get("commandName") != "help"]
commands_section = ".Sh COMMANDS\n.Bl -tag -width 10n\n" + "".join(
    ".It Cm {}\n{}\n".format(c["commandName"], escape(c.get("abstract", ""))) for c in commands
) + ".El\n"
generic = ".Sh \"EXIT STATUS\"\n.Ex -std\n"
if generic not in page:
    sys.exit("man_tsync.py: the plugin's EXIT STATUS section was not found")
page = page.replace(generic, commands_section + exit_section)
with open(page_path, "w") as f:
    f.write(page)

NO_HYPHENATION = ".nh\n.nr doc-hyphen-flags 0\n.cflags 0 - \\[hy] \\[em]\n"
# "130 … (143: by SIGTERM)": a code named inside another's meaning counts too.
other_codes = ", ".join(
    [code for code, _ in codes if code != "0"] + [c for _, meaning in codes for c in re.findall(r"\((\d+): ", meaning)]
)
EXIT_STATUS = (
    ".Sh \"EXIT STATUS\"\n"
    "0 on success. The other codes ({}) mean the same for every command; they are listed in\n"
    ".Xr tsync 1 .\n"
).format(other_codes)

for path in sorted(glob.glob(os.path.join(man_directory, "*.1"))):
    with open(path) as f:
        text = f.read().rstrip("\n") + "\n"
    if os.path.basename(path) != "tsync.1":
        if generic not in text:
            sys.exit("man_tsync.py: {}: the plugin's EXIT STATUS section was not found".format(path))
        text = text.replace(generic, EXIT_STATUS)
    text, titles = re.subn(r"^\.Dt (\S+) 1$", lambda m: ".Dt " + m.group(1).replace(".", "-") + " 1", text, count=1, flags=re.M)
    if titles != 1:
        sys.exit("man_tsync.py: {}: no .Dt line".format(path))
    # The options list: the first list after DESCRIPTION (the discussion makes no list).
    description = text.find("\n.Sh DESCRIPTION\n")
    options = text.find("\n.Bl -tag -width 6n\n", description)
    if description == -1 or options == -1:
        sys.exit("man_tsync.py: {}: no options list after DESCRIPTION".format(path))
    text = text[:options] + "\n.Sh OPTIONS" + text[options:]
    if "\n.Os\n" not in text:
        sys.exit("man_tsync.py: {}: no .Os line".format(path))
    text = text.replace("\n.Os\n", "\n.Os\n" + NO_HYPHENATION, 1)
    with open(path, "w") as f:
        f.write(text)
