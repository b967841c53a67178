"""CUDA C source as the runner's rewrites read it: comments and quoted texts blanked, each blank of the
same length and lines, so that a `;`, a brace or a keyword in them is no code's, and positions and
line numbers stay the source's."""

from __future__ import annotations

import re

#: comments and text in quotes
COMMENT_OR_TEXT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
#: a preprocessor directive, its continued lines included
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def blanked(code: str, quotes: bool = False, directives: bool = False) -> str:
    """`code` with its comments and quoted texts as blanks, of the same length and lines; with
    `quotes`, a quoted text keeps its quotes (`extern "C" {` stays a linkage block); with
    `directives`, its preprocessor directives blanked too (a brace in a macro's definition)."""
    def blank(match: re.Match) -> str:
        text = match.group()
        if quotes and text[0] in "\"'":
            return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]
        return re.sub(r"[^\n]", " ", text)
    text = COMMENT_OR_TEXT.sub(blank, code)
    return _DIRECTIVE.sub(lambda match: re.sub(r"[^\n]", " ", match.group()), text) if directives else text
