"""The floors of harness/: every include of one harness folder by another is one that the table
of floors in docs/architecture.md allows, that table names every folder, and each folder may only
include folders in rows above its own, so the floors cannot form a loop.
Run by ctest: python3 -m unittest floors_test.py"""
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HARNESS = os.path.join(ROOT, "harness")
INCLUDE = re.compile(r'^\s*#\s*include\s+"harness/([^"]+)"', re.M)


def floors_table(text):
    """[(folder, {folders it may include})] in the table's order, from the section's table."""
    section = text.split("## The harness's floors", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"`[a-z_]+/`", cells[0]):
            continue
        allowed = set(re.findall(r"`([a-z_]+)/`", cells[2]))
        rows.append((cells[0].strip("`/"), allowed))
    return rows


def includes_between_folders(harness_dir):
    """{(folder, included folder)}: each include of a file in another harness folder, with where."""
    found = {}
    for folder in sorted(os.listdir(harness_dir)):
        path = os.path.join(harness_dir, folder)
        if not os.path.isdir(path):
            continue
        for dirpath, _, files in os.walk(path):
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".h")):
                    continue
                file = os.path.join(dirpath, name)
                with open(file, encoding="utf-8") as f:
                    for target in INCLUDE.findall(f.read()):
                        other = target.split("/", 1)[0] if "/" in target else "."
                        if other != folder:
                            found.setdefault((folder, other), os.path.relpath(file, ROOT))
    return found


class FloorsTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            self.rows = floors_table(f.read())

    def test_the_table_names_every_folder_of_the_harness_once(self):
        folders = sorted(d for d in os.listdir(HARNESS) if os.path.isdir(os.path.join(HARNESS, d)))
        named = [folder for folder, _ in self.rows]
        self.assertEqual(sorted(named), folders)
        self.assertEqual(len(set(named)), len(named))

    def test_a_folder_may_include_only_folders_above_its_row(self):
        above = set()
        for folder, allowed in self.rows:
            self.assertLessEqual(allowed, above, f"{folder}/ may include a folder not above it: {allowed - above}")
            above.add(folder)

    def test_every_include_between_folders_is_one_the_table_allows(self):
        allowed = dict(self.rows)
        for (folder, other), where in includes_between_folders(HARNESS).items():
            self.assertIn(other, allowed.get(folder, set()),
                          f"{where} includes harness/{other}/: the table of floors does not let {folder}/ include it")

    def test_an_include_against_the_floors_is_caught(self):
        # The check itself, on a made-up harness: a lower folder reaching up.
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for folder in ("gpu", "judging"):
                os.mkdir(os.path.join(tmp, folder))
            with open(os.path.join(tmp, "gpu", "context.hpp"), "w", encoding="utf-8") as f:
                f.write('#include "harness/judging/verdict.hpp"\n')
            found = includes_between_folders(tmp)
        self.assertEqual(list(found), [("gpu", "judging")])
        table = floors_table("## The harness's floors\n\n| folder | holds | may include |\n|---|---|---|\n"
                             "| `gpu/` | a | nothing |\n| `judging/` | b | `gpu/` |\n")
        self.assertEqual(table, [("gpu", set()), ("judging", {"gpu"})])
        self.assertNotIn("judging", dict(table)["gpu"])


if __name__ == "__main__":
    unittest.main()
