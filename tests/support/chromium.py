"""Headless Chromium for the report.html tests: finding the browser (required, never skipped) and reading
the DOM it dumps."""

import html.parser
import os
import shutil
import subprocess
import tempfile

import pytest

BROWSERS = ("chromium", "chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--virtual-time-budget=10000", "--dump-dom",
]


def chromium():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is required for the report.html tests: apt-get install -y chromium")


class Dom(html.parser.HTMLParser):
    """The parts of a dumped DOM the tests look at: every element with its attributes, and table rows."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.rows = []
        self.texts = []
        self._cells = None
        self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag == "tr" and dict(attrs).get("class") == "row":
            self._cells = []
            self.rows.append(self._cells)
        elif tag == "td" and self._cells is not None:
            self._cell = []
            self._cells.append(self._cell)

    def handle_endtag(self, tag):
        if tag == "tr":
            self._cells = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def attribute(self, tag, name, element_id=None):
        for element_tag, attrs in self.elements:
            if element_tag == tag and (element_id is None or attrs.get("id") == element_id):
                return attrs.get(name)
        return None

    def tags(self, tag):
        return [attrs for element_tag, attrs in self.elements if element_tag == tag]

    def column(self, position):
        """Text of one column over the rendered rows (0 severity, 2 host, 5 rule)."""
        return ["".join(cells[position]).strip() for cells in self.rows]


def start_chromium(page, fragment, profile):
    url = "file://%s%s" % (page, fragment)
    return subprocess.Popen([chromium()] + FLAGS + ["--user-data-dir=" + profile, url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rendered_dom(page_html, name="report.html"):
    """The DOM Chromium makes of page_html, opened as a file named name in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        page = os.path.join(folder, name)
        with open(page, "w", encoding="utf-8") as stream:
            stream.write(page_html)
        profile = os.path.join(folder, "profile")
        os.mkdir(profile)
        process = start_chromium(page, "", profile)
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr[-2000:]
        return Dom(stdout)
