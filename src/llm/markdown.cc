// Markdown rendering of requests (see markdown.h).
#include "llm/markdown.h"

#include <array>
#include <fstream>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge::llm {

namespace fs = std::filesystem;

namespace {

std::string decode_base64(std::string_view in) {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < alphabet.size(); ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
    t['-'] = 62;  // URL-safe alphabet too
    t['_'] = 63;
    return t;
  }();
  std::string out;
  out.reserve(in.size() * 3 / 4);
  int bits = 0, value = 0;
  for (char c : in) {
    int d = table[static_cast<unsigned char>(c)];
    if (d < 0) continue;  // padding, whitespace
    value = (value << 6) | d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

std::string extension_for(std::string_view media_type) {
  if (media_type == "image/png") return "png";
  if (media_type == "image/jpeg") return "jpg";
  if (media_type == "image/gif") return "gif";
  if (media_type == "image/webp") return "webp";
  return "bin";
}

}  // namespace

std::vector<std::string> write_request_images(const Request& request, const fs::path& dir, std::string_view stem) {
  std::vector<std::string> names;
  for (const auto& message : request.messages) {
    for (const auto& part : message.content) {
      if (part.type != ContentPart::Type::kImage) continue;
      std::string name = fmt::format("{}-image-{}.{}", stem, names.size() + 1, extension_for(part.media_type));
      write_file_atomically(dir / name, decode_base64(part.data_base64));
      names.push_back(std::move(name));
    }
  }
  return names;
}

std::string render_markdown(const Request& request, const std::vector<std::string>& image_files,
                            std::string_view preamble) {
  std::string out;
  if (!preamble.empty()) {
    out += preamble;
    if (!out.ends_with('\n')) out += '\n';
    out += '\n';
  }
  std::size_t image = 0;
  for (const auto& message : request.messages) {
    out += fmt::format("## {}\n\n", role_name(message.role));
    for (const auto& part : message.content) {
      if (part.type == ContentPart::Type::kText) {
        out += part.text;
        if (!out.ends_with('\n')) out += '\n';
        out += '\n';
      } else {
        std::string name = image < image_files.size() ? image_files[image] : std::string("(image not written)");
        out += fmt::format("![image {}]({})\n\n", image + 1, name);
        ++image;
      }
    }
  }
  return out;
}

void write_file_atomically(const fs::path& path, std::string_view contents) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) throw InputError(fmt::format("cannot write {}", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw InputError(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), ec.message()));
}

}  // namespace kforge::llm
