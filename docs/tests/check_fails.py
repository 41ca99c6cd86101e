#!/usr/bin/env python3
"""docs/tests/check_fails.py: the docs check must fail on broken docs.

Copies the tree (sources and docs, no build directories) to a temporary
directory, runs tools/docs_check.py there once as it is, then once per
fault below, each planted alone into the copy and undone after: a C example
that does not compile, a broken link, a broken anchor, an unknown function,
header, path, environment variable and config key, a config.md row missing,
a knob default changed in the code, a getenv nobody documented, a stale
isa.md, an example block that differs from its file, an output block that
differs from what the (fake) built example prints, a README over 200 lines,
a page no one links. Each must make the check exit non-zero with a new
message that names the fault (and the page and line where there is one).

  python3 docs/tests/check_fails.py --root . [--cc cc]
"""

import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = "docs/testing.md"  # the page faults are appended to


def copy_tree(src, dst):
    def ignore(d, names):
        return [n for n in names if n.startswith("build") or n in (
            ".git", "node_modules", "__pycache__", ".cache")]
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def run_check(root, cc, build=None):
    cmd = [sys.executable, os.path.join(root, "tools", "docs_check.py"),
           "--root", root, "--cc", cc]
    if build:
        cmd += ["--build", build]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return r.returncode, r.stdout.decode("utf-8", "replace")


class Edit:
    """Changes files of the copy; undo() puts them back."""

    def __init__(self, root):
        self.root = root
        self.saved = {}

    def path(self, rel):
        return os.path.join(self.root, rel)

    def keep(self, rel):
        p = self.path(rel)
        if rel not in self.saved:
            self.saved[rel] = open(p, encoding="utf-8").read() if os.path.exists(p) else None

    def append(self, rel, text):
        self.keep(rel)
        with open(self.path(rel), "a", encoding="utf-8") as f:
            f.write(text)

    def write(self, rel, text):
        self.keep(rel)
        os.makedirs(os.path.dirname(self.path(rel)), exist_ok=True)
        with open(self.path(rel), "w", encoding="utf-8") as f:
            f.write(text)

    def replace(self, rel, old, new):
        self.keep(rel)
        t = open(self.path(rel), encoding="utf-8").read()
        if old not in t:
            raise SystemExit("check_fails: %s has no %r to plant a fault in" % (rel, old))
        self.write(rel, t.replace(old, new, 1))

    def undo(self):
        for rel, t in self.saved.items():
            if t is None:
                os.remove(self.path(rel))
            else:
                with open(self.path(rel), "w", encoding="utf-8") as f:
                    f.write(t)
        self.saved = {}


def page_lines(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read().count("\n")


def faults(root):
    """(name, plant(edit) -> the substring a new message must hold)."""
    def at_end(text):
        def plant(e):
            n = page_lines(root, PAGE)
            e.append(PAGE, "\n" + text)
            return n + 2  # the appended text's first line
        return plant

    def simple(text, expect):
        def plant(e):
            line = at_end(text)(e)
            return "%s:%d: %s" % (PAGE, line, expect) if expect else None
        return plant

    def c_example(e):
        line = at_end("```c example\n#include <pto/pto.h>\n"
                      "int main(void) { return no_such_variable; }\n```\n")(e)
        return "%s:%d: c example does not compile" % (PAGE, line + 2)

    def env_var(e):
        line = at_end("```sh\nPTO_NO_SUCH_VAR=1 ./build/tools/pto-bench\n```\n")(e)
        return "%s:%d: environment variable PTO_NO_SUCH_VAR" % (PAGE, line + 1)

    out = [
        ("c example that does not compile", c_example),
        ("broken link", simple("See [nothing](no-such-page.md).\n", "broken link")),
        ("broken anchor", simple("See [config](config.md#no-such-heading).\n",
                                 "broken link")),
        ("unknown function", simple("Call `pto_no_such_function()`.\n",
                                    "unknown name 'pto_no_such_function'")),
        ("unknown macro", simple("Pass `PTO_NO_SUCH_FLAG`.\n",
                                 "unknown name 'PTO_NO_SUCH_FLAG'")),
        ("unknown header", simple("Include `pto/no_such.h`.\n",
                                  "no such header: include/pto/no_such.h")),
        ("unknown path", simple("Read `core/no_such_file.c`.\n",
                                "no such file or directory: core/no_such_file.c")),
        ("unknown environment variable", env_var),
        ("unknown config key in a json block", simple(
            "```json\n{\"knobs\": {\"l1reuse\": 4}}\n```\n",
            "config: unknown config key 'knobs.l1reuse'")),
        ("unknown config key path", simple("Set `knobs.no_such_knob`.\n",
                                           "config key `knobs.no_such_knob`")),
        ("config.md misses a key",
         lambda e: (e.replace("docs/config.md", "| `knobs.fuse` |", "| fuse |"),
                    "docs/config.md:1: no row for config key `knobs.fuse`")[1]),
        ("a knob's default changed in the code",
         lambda e: (e.replace("include/pto/config.h", 'X(L1_REUSE, "l1_reuse", 1,',
                              'X(L1_REUSE, "l1_reuse", 3,'),
                    "`knobs.l1_reuse`: default is 3")[1]),
        ("an environment variable nobody documented",
         lambda e: (e.append("core/env.c", '\nconst char *pto__selftest_env(void);\n'
                             'const char *pto__selftest_env(void) { '
                             'return getenv("PTO_SELFTEST_VAR"); }\n'),
                    "docs/environment.md:1: PTO_SELFTEST_VAR is read")[1]),
        ("a stale isa.md",
         lambda e: (e.replace("core/isa.def", "TTRANS    dst[r][c] = src0[c][r]",
                              "TTRANS    dst[r][c] = src0[c][r] (changed)"),
                    "docs/isa.md")[1] + ":"),
        ("an example block that differs from its file", None),  # below
        ("an output block that differs from the program's", None),
        ("README.md over 200 lines",
         lambda e: (e.append("README.md", "\nfiller\n" * 210), "README.md has")[1]),
        ("a page README.md does not link",
         lambda e: (e.write("docs/orphan.md", "# Orphan\n"),
                    "docs/orphan.md:1: not linked from README.md")[1]),
    ]

    def example_differs(e):
        e.write("docs/examples/selftest.c", "int main(void) { return 0; }\n")
        line = at_end("<!-- example: docs/examples/selftest.c -->\n```c\n"
                      "int main(void) { return 1; }\n```\n")(e)
        return "%s:%d: block differs from docs/examples/selftest.c" % (PAGE, line + 2)

    def output_differs(e):
        e.write("docs/examples/selftest.c", "int main(void) { return 0; }\n")
        line = at_end("<!-- output: docs/examples/selftest.c -->\n```\nhello\n```\n")(e)
        return "%s:%d: output block differs" % (PAGE, line + 2)

    out[-4] = (out[-4][0], example_differs)
    out[-3] = (out[-3][0], output_differs)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(HERE, "..", ".."))
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    a = ap.parse_args()
    src = os.path.abspath(a.root)
    tmp = tempfile.mkdtemp(prefix="docs-check-fails-")
    failed = 0
    try:
        root = os.path.join(tmp, "tree")
        copy_tree(src, root)
        # a fake build tree whose example prints "goodbye"
        build = os.path.join(tmp, "build")
        exe = os.path.join(build, "docs", "examples", "selftest")
        os.makedirs(os.path.dirname(exe))
        with open(exe, "w") as f:
            f.write("#!/bin/sh\necho goodbye\n")
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR)
        rc0, base = run_check(root, a.cc)
        base_lines = set(base.splitlines())
        print("as it is: exit %d, %d problem line(s)" % (
            rc0, sum(1 for l in base_lines if not l.startswith(("note:", "docs:")))))
        e = Edit(root)
        for name, plant in faults(root):
            expect = plant(e)
            rc, out = run_check(root, a.cc, build)
            new = [l for l in out.splitlines()
                   if l not in base_lines and not l.startswith(("note:", "docs:"))]
            hit = [l for l in new if expect in l]
            e.undo()
            if rc != 0 and hit:
                print("ok   %-46s %s" % (name, hit[0][:110]))
            else:
                failed += 1
                print("FAIL %-46s exit %d, expected a new line with %r; new lines: %s" % (
                    name, rc, expect, new[:5] or "none"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print("docs-check-fails: %d planted fault(s) were not caught" % failed)
        return 1
    print("docs-check-fails: every planted fault was caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
