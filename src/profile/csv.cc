#include "profile/csv.h"

#include "util/errors.h"

namespace kforge::profile {

std::vector<CsvRow> parse_csv(std::string_view text) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  bool quoted = false;       // inside a quoted field
  bool field_started = false;  // the current record has at least one character or separator
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
  };
  auto end_row = [&] {
    if (field_started) {
      end_field();
      rows.push_back(std::move(row));
    }
    row.clear();
    field_started = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        quoted = true;
        field_started = true;
        break;
      case ',':
        field_started = true;
        end_field();
        break;
      case '\r':
        break;  // CRLF: the '\n' ends the record
      case '\n':
        end_row();
        break;
      default:
        field_started = true;
        field += c;
    }
  }
  if (quoted) throw InputError("CSV: a quoted field is not closed at the end of the input");
  end_row();
  return rows;
}

}  // namespace kforge::profile
