// A report and the directory it is written to.
//
// A verb builds a Report (its text, its complete JSON document and its named
// tables); commands/report_options.h prints it or, with --output DIR, writes
// report.txt, report.json, one NAME.csv per table and any extra files
// (report.html) into DIR through writeReportFiles().
//
// Every file is written atomically: into a temporary name in DIR, flushed to
// disk, then renamed over its final name, so a crash or a full disk leaves
// either the old file or the new one, never half of one. DIR must be empty
// (or not exist: it is created) unless --overwrite is given; then files of
// the same names are replaced and other files are left alone.
//
// CSV follows RFC 4180: a header row, CRLF line ends, and a field that holds
// a comma, a double quote, CR or LF is enclosed in double quotes, its quotes
// doubled.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>


namespace tcgd::analyze {

// One line of a text report: `indent` spaces, the formatted text, a newline.
template <typename... Args>
void appendLine(std::string* out, int indent, fmt::format_string<Args...> format, Args&&... args) {
  out->append(static_cast<size_t>(indent), ' ');
  fmt::format_to(std::back_inserter(*out), format, std::forward<Args>(args)...);
  out->push_back('\n');
}

// A CSV cell of a value that may be absent (empty then).
inline std::string csvCell(const std::optional<int64_t>& value) {
  return value ? std::to_string(*value) : std::string();
}

struct ReportTable {
  std::string name;  // file stem: "pools" is written as pools.csv
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as many cells as columns
};

struct Report {
  std::string text;  // report.txt, and the terminal's view
  std::string json;  // report.json: one complete document (schema name and version inside)
  std::vector<ReportTable> tables;
  std::vector<std::pair<std::string, std::string>> files;  // other files: name, content
};

// One CSV document: the header row, then the rows (RFC 4180).
std::string csvDocument(const ReportTable& table);
// One field, quoted when it must be.
std::string csvField(std::string_view text);

// The directory a report is written to.
class ReportDirectory {
 public:
  // Creates `path` when it does not exist (its parent must); refuses a
  // non-empty directory unless `overwrite`.
  ReportDirectory(std::string path, bool overwrite);

  const std::string& path() const { return path_; }
  // Writes `name` in the directory atomically (temporary file, fsync,
  // rename). `before_rename`, for tests, runs once the temporary file is
  // complete; when it throws, the temporary file is removed and the final
  // name never appears, as after a crash at that moment.
  void write(const std::string& name, std::string_view content,
             const std::function<void(const std::string& temporary)>& before_rename = {}) const;
  // Makes the renames durable (fsync of the directory).
  void sync() const;

 private:
  std::string path_;
};

// Writes every file of `report` into `dir`: the tables and extra files
// first, report.json, then report.txt last (a reader that waits for
// report.txt finds everything else in place), then syncs the directory.
// Returns the names of the tables and extra files written, in order.
std::vector<std::string> writeReportFiles(const Report& report, const ReportDirectory& dir);

}  // namespace tcgd::analyze
