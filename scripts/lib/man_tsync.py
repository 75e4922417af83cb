"""Post-processes the generated tsync.1 (see scripts/generate-docs.sh).

Usage: man_tsync.py DUMP_HELP_JSON TSYNC_1

- The root help's discussion ends with the exit-status table (from ExitStatus.table): it is cut
  from DESCRIPTION and written as the EXIT STATUS section, one tagged item per code, in place of
  the plugin's generic `.Ex -std`.
- A COMMANDS section lists each subcommand with its abstract, before EXIT STATUS.
"""
import json
import re
import sys

dump_path, page_path = sys.argv[1], sys.argv[2]
with open(dump_path) as f:
    root = json.load(f)["command"]
with open(page_path) as f:
    page = f.read()


def escape(text):
    return text.replace("\\", "\\e")


# The exit codes: the lines after "EXIT STATUS" in the root discussion, "  CODE  meaning".
discussion = root.get("discussion", "")
codes = []
if "EXIT STATUS" in discussion:
    for line in discussion.split("EXIT STATUS", 1)[1].splitlines():
        match = re.match(r"\s+(\d+)\s+(.*)", line)
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
