"""KV015: what a line is (declared here, emitted by ``kvgen._util.lines`` for every file kvgen
reads).

Its own module beside ``kvgen._util.codes.reader`` (which is long already); the code is a reading
code (KV0xx) all the same.
"""

from __future__ import annotations

from kvgen._util.codes._registry import declare

FOREIGN_LINE_BREAK = declare(
    "KV015",
    "foreign-line-break",
    fix="delete the character; a value that needs it writes its escape in a double-quoted string",
    doc="""A character that ends a line for YAML but not for git (U+2028, U+2029, U+0085, lone CR).

## What it does
Refuses a spec (or a kvgen configuration, a deployment file of `kvgen plan --deployment`, or
a config.json given to `kvgen import-hf`) that holds a LINE SEPARATOR (U+2028), PARAGRAPH
SEPARATOR (U+2029), NEXT LINE (U+0085) or a carriage return not followed by a line feed,
anywhere, comments included. Lines end only at a
line feed (`\\n`, or `\\r\\n`); the diagnostic is at the character's line and column counted
that way, before anything is parsed.

## Why it matters
YAML readers end a line at each of these characters, while git, the pull-request diff view,
editors and `wc -l` see one line. A comment line such as
`# reviewed<U+2028>acknowledge:<U+2028>  - {change: capacity-reducing, reason: x}` would look
like a comment to the reviewer and acknowledge a capacity reduction for kvgen, and every
position reported after such a character would point at the wrong line.

## Example
```yaml
# reviewed<U+2028>acknowledge:<U+2028>  - {change: capacity-reducing, reason: x}
```
(one visible line; each `<U+2028>` stands for the invisible character)

## Fix
Delete the character, or end the line with a plain line feed. A value that really needs one
can write it as the escape `"\\u2028"` inside a double-quoted string, which every tool shows.
""",
)
