"""Seeded mutations of robot description files, for the tests that every mutated file loads or fails cleanly."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

_NUMBER = re.compile(r'(?<=")-?\d+(\.\d+)?(e-?\d+)?(?=[" ])')


def mutate(text: str, rng: random.Random, tags: Sequence[str], types: Sequence[str]) -> str:
    """One random edit of an XML file: a line dropped or duplicated, a number made bad, an attribute removed, a
    tag renamed to another of ``tags``, the text truncated, a stray character, a ``type`` changed to one of
    ``types``."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(8)
    if kind == 0 and len(lines) > 1:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif kind == 1:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == 2:  # a number becomes something else
        spans = [m.span() for m in _NUMBER.finditer(text)]
        if spans:
            a, b = rng.choice(spans)
            bad = rng.choice(["nan", "inf", "-1", "1e39", "0", "1e-50", "abc", "", "1 2", "1e400", "-0"])
            return text[:a] + bad + text[b:]
    elif kind == 3:  # an attribute disappears
        spans = [m.span() for m in re.finditer(r' \w+="[^"]*"', text)]
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + text[b:]
    elif kind == 4:  # a tag is renamed
        return text.replace(f"<{rng.choice(tags)}", f"<{rng.choice(tags)}", 1)
    elif kind == 5:  # truncated
        return text[: rng.randrange(len(text))]
    elif kind == 6:  # a stray character
        i = rng.randrange(len(text))
        return text[:i] + rng.choice('<>&"/=x\n') + text[i:]
    else:  # a type changes
        return re.sub(r'type="\w+"', f'type="{rng.choice(types)}"', text, count=1)
    return "".join(lines)
