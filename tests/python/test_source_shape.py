"""The source's shape (STYLE.md): no function outside the CUDA kernels longer than one screen.

C++ bodies are found roughly, by brace matching over the text with comments, string and character
literals and preprocessor lines blanked out: a `{` at namespace or class scope whose head (the text
since the previous `;`, `{` or `}`) holds a parameter list opens a function body. Kernels
(`src/core/cuda/`, and `__global__` / `__device__` functions anywhere) are exempt: their length is
their tiling, spelt out on purpose.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_LINES = 80
SOURCES = ("*.cpp", "*.h", "*.cu", "*.cuh")
EXEMPT_DIRS = ("src/core/cuda",)

_LITERAL = re.compile(
    r"""//[^\n]*                      # line comment
      | /\*.*?\*/                     # block comment
      | R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"   # raw string
      | "(?:\\.|[^"\\\n])*"           # string
      | '(?:\\.|[^'\\\n])*'           # character
      | ^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*   # preprocessor line, continuations included
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
_SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b")
_KERNEL = re.compile(r"__global__|__device__")


def blank_literals(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces, newlines kept."""
    return _LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _outside_parens(head):
    depth, out = 0, []
    for ch in head:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def _opens_function(head):
    """Whether a `{` at namespace or class scope after `head` opens a function body."""
    if "(" not in head:
        return False
    outer = _outside_parens(head)
    if re.search(r"(?<![=!<>])=(?!=)", outer.replace("operator=", "")):
        return False  # an initialised variable: `const T table = {...}`
    return not _SCOPE.search(outer)


def long_functions(text, limit=MAX_LINES):
    """(first line, lines, head) of every function body of `text` longer than `limit` lines."""
    code = blank_literals(text)
    found, stack, head_start = [], [], 0
    for i, ch in enumerate(code):
        if ch == ";":
            head_start = i + 1
        elif ch == "{":
            head = code[head_start:i]
            in_function = any(kind == "function" for kind, _ in stack)
            kind = "other" if in_function else ("function" if _opens_function(head) else "scope")
            if kind == "function" and _KERNEL.search(head):
                kind = "kernel"
            stack.append((kind, i))
            head_start = i + 1
        elif ch == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function" and not any(k == "function" for k, _ in stack):
                    first = code.count("\n", 0, start) + 1
                    lines = code.count("\n", start, i) + 1
                    if lines > limit:
                        found.append((first, lines, " ".join(code[max(0, start - 200):start].split()[-8:])))
            head_start = i + 1
    return found


def source_files():
    for pattern in SOURCES:
        for path in sorted((ROOT / "src").rglob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(EXEMPT_DIRS):
                yield path


def test_long_function_is_found():
    body = "\n".join(f"  x += {i};" for i in range(MAX_LINES))
    text = f'namespace a {{\n// {{ not a brace\nint f(int x) {{\n  const char* s = "}}";\n{body}\n  return x;\n}}\n}}\n'
    assert [(line, lines) for line, lines, _ in long_functions(text)] == [(3, MAX_LINES + 4)]
    short = "struct S {\n  int g() const { return 1; }\n};\nconst int table[] = {\n" + "1,\n" * 100 + "};\n"
    assert long_functions(short) == []
    kernel = f"__global__ void k(float* x) {{\n{body}\n}}\n"
    assert long_functions(kernel) == []


def test_no_function_over_one_screen():
    offenders = []
    for path in source_files():
        for line, lines, head in long_functions(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {lines} lines ({head})")
    assert not offenders, f"functions over {MAX_LINES} lines:\n" + "\n".join(offenders)


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
