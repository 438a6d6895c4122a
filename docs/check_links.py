#!/usr/bin/env python3
"""docs:links: the README and the user guide hold together.

Every relative link of the given Markdown files names a file of the tree and, with a
'#fragment', a heading of that file (GitHub's anchors); the README links every page of
docs/; the README stays a front door (at most MAX_README_LINES lines).
Run: check_links.py SOURCE_DIR [FILE.md...]  (paths relative to SOURCE_DIR; without files,
every Markdown file of the tree outside build folders and .git)
"""
import os
import re
import sys

MAX_README_LINES = 250
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def prose_links(text):
    """(line, target) of every link outside fenced code blocks and code spans; a link's text
    may run over lines."""
    fenced, kept = False, []
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            line = ''
        kept.append('' if fenced else line)
    prose = re.sub(r'`[^`\n]*`', lambda m: ' ' * len(m.group(0)), '\n'.join(kept))
    for m in LINK.finditer(prose):
        yield prose.count('\n', 0, m.start(1)) + 1, m.group(1)


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file (duplicates get -1, -2, ...)."""
    seen, out = {}, set()
    with open(path, encoding='utf-8') as f:
        text = f.read()
    fenced = False
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        title = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', m.group(1))
        slug = re.sub(r'[^\w\- ]', '', title.lower()).replace(' ', '-')
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f'{slug}-{n}')
    return out


def tree_markdown(src):
    """The tree's Markdown files, outside .git and build folders (a CMakeCache.txt marks one)."""
    out = []
    for top, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.') and not os.path.islink(os.path.join(top, d))
                         and not os.path.exists(os.path.join(top, d, 'CMakeCache.txt')))
        out += [os.path.relpath(os.path.join(top, n), src) for n in sorted(names) if n.endswith('.md')]
    return out


def main():
    src = sys.argv[1]
    files = sys.argv[2:] or tree_markdown(src)
    problems = []
    linked_from_readme = set()
    checked = 0
    for rel in files:
        path = os.path.join(src, rel)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        if rel == 'README.md':
            lines = text.count('\n')
            if lines > MAX_README_LINES:
                problems.append(f'README.md has {lines} lines, more than {MAX_README_LINES}: it is the front door; '
                                'move the detail into the docs/ page of its task and link it')
        for n, target in prose_links(text):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # https:, mailto:
                continue
            checked += 1
            file_part, _, fragment = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f'{rel}:{n}: link "{target}"'
            if not os.path.exists(dest):
                problems.append(f'{where}: no file {os.path.relpath(dest, src)}')
                continue
            if rel == 'README.md':
                linked_from_readme.add(os.path.relpath(dest, src))
            if fragment and dest.endswith('.md') and fragment not in anchors(dest):
                problems.append(f'{where}: {os.path.relpath(dest, src)} has no heading with the anchor '
                                f'"#{fragment}" (it has: {", ".join(sorted(anchors(dest)))})')
    if 'README.md' in files:
        for page in sorted(os.listdir(os.path.join(src, 'docs'))):
            if page.endswith('.md') and f'docs/{page}' not in linked_from_readme:
                problems.append(f'docs/{page} is not linked from README.md: add it to "Where to go next"')
    if problems:
        print('\n'.join(problems))
        return 1
    print(f'{len(files)} files, {checked} relative links: each file and anchor resolves; README.md links every docs/ page')
    return 0


if __name__ == '__main__':
    sys.exit(main())
