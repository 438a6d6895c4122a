#!/usr/bin/env python3
"""Hostile strings in a results file, and checks that every rendering of it is inert.

  hostile_text.py make GOOD OUT       OUT: GOOD with a hostile payload added to every text field
  hostile_text.py xml FILE            junit: well-formed XML 1.0 (xml.etree), only JUnit's elements
  hostile_text.py term FILE           terminal text: no control byte but newline and tab, no C1
  hostile_text.py md-html FILE        cmark's HTML of a Markdown file: no link, image or raw HTML
                                      that the payload brought
  hostile_text.py dom FILE            Chromium's DOM of report.html: no script of the payload ran,
                                      no element of the payload was made
Exit status 0 when the check holds, 1 (with what was found) when not.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

MARK = "PWNED"
# Each piece attacks one output: HTML (script, event handler, element), Markdown (link,
# image, autolink, raw HTML, table and code breaks), terminals (OSC title, CSI, C1 CSI,
# bell, backspace, carriage return), XML (characters XML 1.0 cannot hold, CDATA end).
PAYLOAD = (
    "<script>document.title='" + MARK + "-script'</script>"
    "<img src=x onerror=\"document.title='" + MARK + "-img'\">"
    "\"'><svg onload=\"document.title='" + MARK + "-svg'\"></svg>"
    "<b data-x=" + MARK + "-element>bold</b>"
    " [click](javascript:alert('" + MARK + "-link')) ![pic](http://evil.example/" + MARK + "-image.png)"
    " <http://evil.example/" + MARK + "-autolink> <!-- comment --> ` | * _ ~ # &amp; ]]>"
    "\x1b]0;" + MARK + "-title\x07\x1b[2J\x1b[31mred\u009b31m\x08\r\x0b\x0c\x7f\x00"
    "\ufffe\uffff\u2028\n# " + MARK + "-heading\n```\n"
)

# Fields whose values are names from a fixed list (statuses, levels, ...): the reader
# refuses any other value, so the payload goes only into free text.
ENUMS = {"schema", "status", "level", "verdict", "result", "decided_by", "from", "to", "expected_status", "outcome",
         "better", "encoding", "kind", "audit", "transport", "unit", "start", "profile", "expected",
         "basis_kind"}


def hostile(doc, key=None):
    if isinstance(doc, dict):
        return {k: hostile(v, k) for k, v in doc.items()}
    if isinstance(doc, list):
        return [hostile(v, key) for v in doc]
    if isinstance(doc, str) and key not in ENUMS:
        return doc + PAYLOAD
    return doc


def make(good, out):
    with open(good, encoding="utf-8") as f:
        doc = json.load(f)
    doc = hostile(doc)
    # Hostile keys too (observations are a map of names to values), and text where the
    # schema keeps numbers but the reader keeps any JSON (the audit's descriptor counts).
    for c in doc.get("cases", []):
        if isinstance(c.get("observations"), dict):
            c["observations"]["key" + PAYLOAD] = "value" + PAYLOAD
        audit = c.get("audit") if isinstance(c.get("audit"), dict) else {}
        roles = audit.get("roles") if isinstance(audit.get("roles"), dict) else {}
        # Keyed by role name, which now ends with the payload like every other text.
        audit["roles"] = {k + PAYLOAD: v for k, v in roles.items()}
        for a in audit["roles"].values():
            if isinstance(a, dict):
                a["fds_before"] = PAYLOAD
                a["fds_after"] = [PAYLOAD]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=1)


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def check_xml(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail(f"{path} is not well-formed XML: {e}")
    allowed = {"testsuites", "testsuite", "testcase", "failure", "error", "skipped", "system-out", "system-err",
               "properties", "property"}
    for el in root.iter():
        if el.tag not in allowed:
            fail(f"{path}: element <{el.tag}> is no JUnit element: the payload made it")
    text = open(path, encoding="utf-8").read()
    if MARK not in text:
        fail(f"{path} does not hold the payload at all: the check would prove nothing")
    print(f"ok: {path} parses as XML; {sum(1 for _ in root.iter())} elements, all JUnit's")


C0 = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def check_term(path):
    data = open(path, "rb").read()
    m = C0.search(data)
    if m:
        at = m.start()
        fail(f"{path}: control byte {m.group()!r} at offset {at}: ...{data[max(0, at - 40):at + 10]!r}")
    if MARK.encode() not in data:
        fail(f"{path} does not hold the payload at all: the check would prove nothing")
    print(f"ok: {path}: {len(data)} bytes, no control byte but newline and tab")


class Elements(HTMLParser):
    """Every element a real HTML parser sees, with its attributes, and the text of each
    <script> and <title>: text that only looks like a tag (escaped, or inside an attribute
    value) is no element here."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.scripts = []
        self.titles = []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "title") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "title":
            self.titles.append(data)


def elements(path):
    p = Elements()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    return p


def payload_elements(p):
    """The elements the payload would have made, were it live."""
    found = []
    for tag, attrs in p.tags:
        values = " ".join(v or "" for v in attrs.values())
        if tag == "img" and (attrs.get("src") == "x" or "evil.example" in values):
            found.append(f"<img {attrs}>")
        if tag == "svg" and "onload" in attrs:
            found.append(f"<svg {attrs}>")
        if tag == "b" and "data-x" in attrs:
            found.append(f"<b {attrs}>")
        href = attrs.get("href") or ""
        # A link within the page (#case-<id>) may hold the payload as its fragment's text.
        if tag == "a" and not href.startswith("#") and ("javascript:" in href or "evil.example" in href):
            found.append(f"<a {attrs}>")
        if any(k.startswith("on") for k in attrs) and MARK in values:
            found.append(f"<{tag}> with an event handler {attrs}")
    found += [f"<script> {s[:60]!r}" for s in p.scripts if MARK in s]
    return found


def check_md_html(path):
    p = elements(path)
    found = payload_elements(p)
    html = open(path, encoding="utf-8").read()
    if "<!-- comment" in html:
        found.append("a raw HTML comment")
    if re.search(r"<h[1-6][^>]*>\s*" + MARK + "-heading", html):  # a line of the payload became a heading
        found.append("a heading")
    if found:
        fail(f"{path}: the payload is live Markdown:\n  " + "\n  ".join(found))
    if MARK not in html:
        fail(f"{path} does not hold the payload at all: the check would prove nothing")
    print(f"ok: {path}: {len(p.tags)} elements; no link, image, heading or raw HTML of the payload")


def check_dom(path):
    p = elements(path)
    # The payload's scripts set the title to exactly PWNED-script, -img or -svg; the
    # page's own titles hold the payload only as text, around ipcheck's words.
    ran = [t for t in p.titles if re.fullmatch(MARK + r"-\w+", t.strip())]
    if ran:
        fail(f"{path}: a script of the payload ran: the title is {ran[0]!r}")
    found = payload_elements(p)
    if found:
        fail(f"{path}: the payload made elements:\n  " + "\n  ".join(found[:10]))
    if MARK not in open(path, encoding="utf-8").read():
        fail(f"{path} does not hold the payload at all: the check would prove nothing")
    title = p.titles[0].strip() if p.titles else ""
    print(f"ok: {path}: {len(p.tags)} elements, the title starts {title[:40]!r}; no script of the payload ran, "
          "no element of it was made")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], sys.argv[3])
    elif cmd == "xml":
        check_xml(sys.argv[2])
    elif cmd == "term":
        check_term(sys.argv[2])
    elif cmd == "md-html":
        check_md_html(sys.argv[2])
    elif cmd == "dom":
        check_dom(sys.argv[2])
    else:
        fail("unknown command " + cmd)
