// A human-readable rendering of a Request, for people (manual:) and for command-line
// tools that take a plain prompt (exec:'s KFORGE_PROMPT_FILE). Images are written next to
// the Markdown file and linked from it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "llm/provider.h"

namespace kforge::llm {

// Writes every image of `request` as `<dir>/<stem>-image-<n>.<ext>` and returns the file
// names (not paths), in the order the images appear.
std::vector<std::string> write_request_images(const Request& request, const std::filesystem::path& dir,
                                              std::string_view stem);

// Markdown: `preamble` (if any), then one "## <role>" section per message with its text,
// and images as links to `image_files` (as returned by write_request_images).
std::string render_markdown(const Request& request, const std::vector<std::string>& image_files,
                            std::string_view preamble = {});

// Writes `contents` to `path` via a temporary file and rename, so readers never see a
// partial file. Throws InputError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace kforge::llm
