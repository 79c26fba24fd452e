#!/usr/bin/env python3
"""List every C++ or Python function longer than a limit; exit 1 if there is one (a line budget, kept by a ctest).

    python3 scripts/function_lengths.py [--limit 100] [--root DIR] [PATH ...]

Scans the C++ sources (.cpp, .hpp, .h, .cc) and the Python files (.py) under core/ layers/ training/
experiments/ bench/ python/ tests/pytorch/ scripts/ (not the other tests/), or the PATHs given (files or
folders). A function's length is counted from the first line of its signature to its closing brace (C++)
or its last line (Python; decorators not counted); lambdas, local classes and nested functions count as
part of the function around them. Standard library only, so it runs as a ctest with /usr/bin/python3 and
nothing installed.

How it finds C++ functions, without a C++ parser: comments, strings, character literals and preprocessor
lines are blanked out (line breaks kept), then braces are matched. A "{" outside any function opens a
function body when the text before it (since the last ";", "{" or "}") ends with ")" and perhaps
qualifiers (const, noexcept, override, a trailing return type, a constructor's initializer list);
namespaces, classes, enums and initializers (tables) are walked into, so methods defined in a class and
lambdas stored in a table are found too. Good enough for this code base; --self-test checks the cases
that could fool it (the ctest runs it before the scan, so a scanner that stops seeing functions fails).
Python functions come from the standard parser (ast): every def outside another def, methods included.
"""
import argparse
import ast
import os
import re
import sys

DEFAULT_DIRS = ("core", "layers", "training", "experiments", "bench", "python", "tests/pytorch", "scripts")
EXTENSIONS = (".cpp", ".hpp", ".h", ".cc", ".py")

# "path:function" -> why it may be longer than the limit. Keep this short: only generated tables,
# never ordinary code (split that instead).
ALLOWED = {
}

# "path:function" -> the branch that splits it, while that branch is not merged. An entry that is no
# longer over the limit fails the check (it would hide the next one): delete it when the split lands.
PENDING = {
}

_SCOPE_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
_QUALIFIERS = r"(?:\s|const\b|volatile\b|noexcept\b(?:\s*\([^()]*\))?|override\b|final\b|mutable\b|&&?|->[^;{}]*)*"
# ")" then qualifiers, or ")" then a constructor's initializer list ": a_(x), b_(y)" (braced ones are
# folded into the header before this test, see _blank_brace_init).
_FUNCTION_END = re.compile(r"\)" + _QUALIFIERS + r"(?::[^;{}]*\))?" + _QUALIFIERS + r"$")
_NAME_BEFORE_PAREN = re.compile(r"(operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$")
_LAMBDA_VARIABLE = re.compile(r"([A-Za-z_]\w*)\s*=\s*\[")


def strip_code(text):
    """Blank out comments, string and character literals and preprocessor lines, keeping line breaks
    (so offsets map to the same line numbers) and the quotes of literals."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only blanks since the last line break: a "#" here starts a directive
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if line_start and c == "#":
            # A directive, with its "\" continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(_blank(text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^ ()\\\t\n]{0,16})\(', text[i:i + 40])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + _blank(text[i + 2:end - 2]) if end - i >= 4 else _blank(text[i:end]))
            i = end
            continue
        if c == '"' or (c == "'" and not _is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            out.append(c + _blank(text[i + 1:end - 1]) + (c if end - 1 > i else ""))
            i = end
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _blank(s):
    return re.sub(r"[^\n]", " ", s)


def _is_digit_separator(text, i):
    """A "'" inside a number (1'000'000) rather than a character literal."""
    m = re.search(r"[\w.']*$", text[max(0, i - 40):i])
    token = m.group(0) if m else ""
    return bool(token) and token[0].isdigit() and i + 1 < len(text) and text[i + 1].isalnum()


def _matching_brace(code, i):
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def _next_char(code, i):
    m = re.compile(r"\S").search(code, i)
    return m.group(0) if m else ""


def _function_name(header):
    """The name in a function's signature: the identifier before its parameter list; "lambda" for one."""
    depth_angle = 0
    for k, c in enumerate(header):
        if c == "<":
            depth_angle += 1
        elif c == ">" and depth_angle:
            depth_angle -= 1
        elif c == "(" and depth_angle == 0:
            before = header[:k].rstrip()
            if before.endswith("]"):
                var = _LAMBDA_VARIABLE.search(before)
                return var.group(1) if var else "lambda"
            m = _NAME_BEFORE_PAREN.search(before)
            if m and m.group(1) not in ("alignas", "decltype", "__attribute__"):
                return re.sub(r"\s+", "", m.group(1))
    return "?"


def find_functions(code):
    """(name, first line, last line) of every function in stripped code, outermost ones only."""
    functions = []
    line_of = _line_index(code)
    i, n = 0, len(code)
    header_start = 0
    stack = []  # "scope" (namespace, class, extern) or "data" (an initializer) per open brace
    while i < n:
        c = code[i]
        if c == ";":
            header_start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i].strip()
            close = _matching_brace(code, i)
            if _FUNCTION_END.search(header):
                first = header_start + (len(code[header_start:i]) - len(code[header_start:i].lstrip()))
                functions.append((_function_name(header), line_of(first), line_of(close)))
                i = close + 1
                header_start = i
                continue
            if stack[-1:] != ["data"] and _next_char(code, close + 1) in (",", "{") \
                    and not _SCOPE_KEYWORDS.search(header):
                # A braced member initializer "x_{a}, y_{b} {" inside a constructor's signature:
                # fold it into the header.
                i = close + 1
                continue
            scope = _SCOPE_KEYWORDS.search(header.split("(")[0]) and "=" not in header
            stack.append("scope" if scope else "data")
            header_start = i + 1
        i += 1
    return functions


def find_python_functions(text, path="<source>"):
    """(name, first line, last line) of every Python function not inside another: module-level
    functions and the methods of classes (at any depth of classes); nested defs belong to theirs."""
    functions = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((prefix + child.name, child.lineno, child.end_lineno))
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)
    walk(ast.parse(text, filename=path), "")
    return functions


def _line_index(code):
    starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(offset):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1
    return line_of


def source_files(root, paths):
    for path in paths:
        full = os.path.join(root, path)
        if os.path.isfile(full):
            yield path
            continue
        for folder, dirs, files in os.walk(full):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(folder, name), root)


# Snippets the scanner must read right: (source, [(name, first line, last line)]).
_SELF_TEST = [
    ("int f(int a) {\n" + "  a += 1;\n" * 120 + "  return a;\n}\n", [("f", 1, 123)]),
    ("namespace pelab {\nnamespace {\nstruct S {\n  int g() const { return 1; }\n};\n}  // namespace\n"
     "Foo::Foo(int a) : x_{a}, y_(a) {\n  run();\n}\n}\n", [("g", 4, 4), ("Foo::Foo", 7, 9)]),
    ('const char* s = "{ not a brace";\nchar c = \'{\';\nint n = 1\'000;\n// void h() {\n'
     'auto r = R"x(int no() { )x";\nvoid k() {\n  if (n) {\n  }\n}\n', [("k", 6, 9)]),
    ("const Entry kTable[] = {\n  {\"a\", [](int x) {\n    return x;\n  }},\n  {\"b\", nullptr},\n};\n"
     "auto add = [](int a, int b) -> int {\n  return a + b;\n};\n", [("lambda", 2, 4), ("add", 7, 9)]),
    ("#define M(x) { x }\ntemplate <class T>\nT twice(T x) noexcept {\n  auto l = [&] { return x; };\n"
     "  return l() + l();\n}\nenum class E { a, b };\n", [("twice", 2, 6)]),
]


# The same for Python: a def's lines without its decorators, nested defs inside theirs, methods by
# Class.name, a def in a string is none.
_SELF_TEST_PY = [
    ("def f(a):\n" + "    a += 1\n" * 120 + "    return a\n", [("f", 1, 122)]),
    ("import os\n\n@decorator\ndef g(x,\n      y):\n    def inner():\n        return x\n    return inner()\n"
     "\n\nclass C:\n    async def m(self):\n        return '''\ndef not_one():\n'''\n\n    class D:\n"
     "        def n(self): return 1\n\nif True:\n    h = lambda: 0\n    def k():\n        pass\n",
     [("g", 4, 8), ("C.m", 12, 15), ("C.D.n", 18, 18), ("k", 22, 23)]),
]


def self_test():
    """Whether the scanners find what _SELF_TEST and _SELF_TEST_PY say; prints what they got wrong."""
    ok = True
    for source, want in _SELF_TEST:
        got = find_functions(strip_code(source))
        if got != want:
            print(f"function_lengths self-test: found {got}, expected {want} in:\n{source}", file=sys.stderr)
            ok = False
    for source, want in _SELF_TEST_PY:
        got = find_python_functions(source)
        if got != want:
            print(f"function_lengths self-test (Python): found {got}, expected {want} in:\n{source}", file=sys.stderr)
            ok = False
    return ok


def functions_in(root, path):
    """(name, first line, last line) of the functions of one source file."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.endswith(".py"):
        return find_python_functions(text, path)
    return find_functions(strip_code(text))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="most lines a function may have (default 100)")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository (default: the one this script is in)")
    parser.add_argument("paths", nargs="*", help=f"files or folders under ROOT (default: {' '.join(DEFAULT_DIRS)})")
    parser.add_argument("--self-test", action="store_true",
                        help="first check the scanner on built-in snippets (exit 2 if it misreads one)")
    args = parser.parse_args(argv)
    if args.self_test and not self_test():
        return 2

    too_long, pending = [], set()
    paths = list(source_files(args.root, args.paths or DEFAULT_DIRS))
    for path in paths:
        for name, first, last in functions_in(args.root, path):
            length = last - first + 1
            key = f"{path.replace(os.sep, '/')}:{name}"
            if length <= args.limit or key in ALLOWED:
                continue
            if key in PENDING:
                pending.add(key)
                print(f"{path}:{first}: {name} has {length} lines (limit {args.limit}), pending: {PENDING[key]}")
            else:
                too_long.append((length, f"{path}:{first}", name))
    for length, where, name in sorted(too_long, reverse=True):
        print(f"{where}: {name} has {length} lines (limit {args.limit})")
    # A PENDING entry whose file was scanned and whose function is within the limit (or gone) is stale.
    scanned = set(p.replace(os.sep, "/") for p in paths)
    stale = sorted(k for k in PENDING if k not in pending and k.rsplit(":", 1)[0] in scanned)
    for key in stale:
        print(f"{key} is no longer over {args.limit} lines: delete its PENDING entry in scripts/function_lengths.py")
    if too_long:
        print(f"{len(too_long)} function(s) over {args.limit} lines: split them into named steps", file=sys.stderr)
    return 1 if too_long or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
