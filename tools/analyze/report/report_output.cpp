#include "report/report_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

namespace fs = std::filesystem;

std::string errnoText(int error) { return std::strerror(error); }

// Closes a descriptor on every path out of write().
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  // close() can report a deferred write error (NFS): it must be checked.
  int release() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

void writeAll(int fd, std::string_view content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw AnalyzeError("cannot write " + path + ": " + errnoText(errno));
    done += static_cast<size_t>(n);
  }
}

bool needsQuotes(std::string_view text) {
  return text.find_first_of(",\"\r\n") != std::string_view::npos;
}

}  // namespace

std::string csvField(std::string_view text) {
  if (!needsQuotes(text)) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string csvDocument(const ReportTable& table) {
  std::string out;
  const auto row = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i != 0) out.push_back(',');
      out += csvField(cells[i]);
    }
    out += "\r\n";
  };
  row(table.columns);
  for (const auto& cells : table.rows) row(cells);
  return out;
}

ReportDirectory::ReportDirectory(std::string path, bool overwrite) : path_(std::move(path)) {
  std::error_code error;
  const fs::file_status status = fs::status(path_, error);
  if (status.type() == fs::file_type::not_found) {
    if (::mkdir(path_.c_str(), 0777) != 0)
      throw AnalyzeError("cannot create the output directory " + path_ + ": " + errnoText(errno));
    return;
  }
  if (error) throw AnalyzeError("cannot read " + path_ + ": " + error.message());
  if (status.type() != fs::file_type::directory)
    throw AnalyzeError("cannot write the report to " + path_ + ": it is not a directory");
  if (overwrite) return;
  const fs::directory_iterator first(path_, error);
  if (error) throw AnalyzeError("cannot read the directory " + path_ + ": " + error.message());
  if (first != fs::directory_iterator()) {
    throw AnalyzeError("the output directory " + path_ +
                       " is not empty; give --overwrite to replace the report files in it");
  }
}

void ReportDirectory::write(const std::string& name, std::string_view content,
                            const std::function<void(const std::string&)>& before_rename) const {
  const std::string target = path_ + "/" + name;
  // A dot name is hidden from a casual ls, and the pid keeps two writers of
  // one directory apart; O_EXCL refuses to reuse a leftover.
  const std::string temporary = path_ + "/." + name + ".tmp-" + std::to_string(::getpid());
  ::unlink(temporary.c_str());  // a leftover of this pid's predecessor
  Descriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) throw AnalyzeError("cannot create " + temporary + ": " + errnoText(errno));
  try {
    writeAll(fd.get(), content, temporary);
    // Flushed before the rename: otherwise a power cut after it can leave
    // the new name pointing at an empty or short file.
    if (::fsync(fd.get()) != 0)
      throw AnalyzeError("cannot write " + temporary + ": " + errnoText(errno));
    if (fd.release() != 0)
      throw AnalyzeError("cannot write " + temporary + ": " + errnoText(errno));
    if (before_rename) before_rename(temporary);
    if (::rename(temporary.c_str(), target.c_str()) != 0)
      throw AnalyzeError("cannot write " + target + ": " + errnoText(errno));
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

void ReportDirectory::sync() const {
  Descriptor fd(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  // Best effort: some file systems refuse fsync on a directory; the files
  // themselves are already whole.
  if (fd.get() >= 0) (void)::fsync(fd.get());
}

std::vector<std::string> writeReportFiles(const Report& report, const ReportDirectory& dir) {
  std::vector<std::string> written;
  for (const ReportTable& table : report.tables) {
    dir.write(table.name + ".csv", csvDocument(table));
    written.push_back(table.name + ".csv");
  }
  for (const auto& [name, content] : report.files) {
    dir.write(name, content);
    written.push_back(name);
  }
  dir.write("report.json", report.json);
  dir.write("report.txt", report.text);
  dir.sync();
  return written;
}

}  // namespace tcgd::analyze
