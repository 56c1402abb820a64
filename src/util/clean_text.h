// Text that came from a candidate (its errors, its output, its source, a log it wrote) is made
// harmless before kforge shows it: on a terminal, an escape sequence could paint a fake verdict line
// ("status: correct" in green), move the cursor over kforge's own lines, or write the user's
// clipboard (OSC 52); in Markdown, raw HTML and image links would render in a viewer.
#pragma once

#include <string>
#include <string_view>

namespace kforge {

// `text` without terminal control: escape sequences (CSI, OSC, DCS and the other string sequences,
// two-byte ESC sequences), C0 controls but newline and tab, DEL and C1 controls (as bytes or as
// UTF-8); a carriage return (which lets a line overwrite the one before) becomes a newline unless
// it ends one. Printable text, UTF-8 included, is kept as it is.
std::string terminal_text(std::string_view text);

// terminal_text(text) on one line (newlines and tabs become spaces), for progress lines: a line
// break in a candidate's text must not start a line that reads as kforge's own.
std::string terminal_line(std::string_view text);

// `text` (terminal_text first) for the running text of a Markdown document, e.g. a table cell:
// the characters that make HTML, entities, images, links, code or a cell boundary
// (`\ ` * [ ] < > ! | &`) are escaped (an underscore inside a name such as 01_relu makes no
// emphasis, and is left as it is). Newlines become spaces: it stays one line, so no
// heading or list can start in it.
std::string markdown_text(std::string_view text);

// `text` (terminal_text first) as a fenced Markdown code block, fenced with more backticks than any
// run in it, so nothing in it can close the block (and nothing in a code block renders as HTML).
std::string markdown_code_block(std::string_view text, std::string_view language = "");

// `text` (terminal_text first) as a Markdown code span, for a table cell: `|` and newlines would break the row.
std::string markdown_code_span(std::string_view text);

}  // namespace kforge
