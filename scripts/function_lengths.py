#!/usr/bin/env python3
"""Lists C++ functions longer than a limit, and files longer than a limit.

    scripts/function_lengths.py [--max-function 150] [--max-file 800] FILE...

A brace-matching reading, not a parser: a function is a '{' opened at namespace or class scope
right after a ')' (optionally followed by const, override, noexcept, an initialiser list or a
trailing return type). Lambdas and nested blocks count towards their enclosing function.
Exit status 1 when anything is over a limit, so the check can run in CI.
"""
import argparse
import re
import sys


def strip(text):
    """Blanks out comments, string and character literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + '\n' * text.count('\n', i, j))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


SIGNATURE = re.compile(r'\)\s*(const|override|final|noexcept|mutable|\s|->[\w:<>,\s*&]+)*$')
INIT_LIST = re.compile(r'\)\s*:\s*[\w:]+\s*[({].*[)}]\s*$', re.S)


def functions(path):
    text = strip(open(path, encoding='utf-8').read())
    stack, start, line, found = [], 0, 1, []
    for i, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c == '{':
            head = text[start:i]
            scope = all(kind in ('namespace', 'class') for kind, _ in stack)
            words = head.split()
            if scope and re.search(r'\b(namespace)\b', head) and '(' not in head:
                stack.append(('namespace', line))
            elif scope and re.search(r'\b(class|struct|union|enum)\b', head) and not SIGNATURE.search(head.strip()):
                stack.append(('class', line))
            elif scope and (SIGNATURE.search(head.strip()) or INIT_LIST.search(head.strip())):
                name = re.findall(r'([~\w:]+)\s*\(', head)
                stack.append(('function', (line, name[0] if name else '?')))
            else:
                stack.append(('block', line))
            start = i + 1
        elif c == '}':
            if stack:
                kind, info = stack.pop()
                if kind == 'function':
                    found.append((info[1], info[0], line - info[0] + 1))
            start = i + 1
        elif c == ';':
            start = i + 1
    return found, line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--max-function', type=int, default=150)
    ap.add_argument('--max-file', type=int, default=800)
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    over = 0
    for path in a.files:
        found, lines = functions(path)
        if lines > a.max_file:
            print(f'{path}: {lines} lines (limit {a.max_file})')
            over += 1
        for name, first, length in found:
            if length > a.max_function:
                print(f'{path}:{first}: {name} is {length} lines (limit {a.max_function})')
                over += 1
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
