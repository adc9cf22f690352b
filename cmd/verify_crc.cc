// `silt verify-crc PATH...`: check segment files, partition directories or whole data dirs;
// with --repair, keep every valid batch and quarantine only the damaged bytes.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

#include "base/clock.h"
#include "base/file.h"
#include "client/table.h"
#include "format/layout.h"
#include "cmd/command.h"
#include "cmd/usage.h"
#include "storage/verify.h"

namespace silt::cmd {
namespace {

struct VerifyFlags {
  std::vector<std::string> paths;
  bool repair = false;
  bool dry_run = false;
  bool json = false;
  std::string format = "text";
  bool quiet = false;
  bool shallow = false;
};

void PrintProblem(const storage::Problem& p, bool json) {
  if (json) {
    nlohmann::ordered_json j = {{"file", p.file},
                        {"position", p.position},
                        {"kind", storage::ProblemKindName(p.kind)},
                        {"detail", p.detail}};
    std::cout << j.dump() << '\n';
  } else {
    std::cout << p.file << ":" << p.position << ": " << storage::ProblemKindName(p.kind) << ": "
              << p.detail << '\n';
  }
}

// The partition directory a problem belongs to.
std::string PartitionOf(const std::string& file) { return DirName(file); }

bool IsSegmentFileName(const std::string& path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(format::kLogSuffix) || ends(format::kIndexSuffix) ||
         ends(format::kTimeIndexSuffix) || ends(format::kSnapshotSuffix);
}

void PrintSkipped(const std::string& path, bool json) {
  static const char* kWhy = "not a segment file (.log, .index, .timeindex or .snapshot)";
  if (json)
    std::cout << nlohmann::ordered_json{{"skipped", path}, {"reason", kWhy}}.dump() << '\n';
  else
    std::cout << "skipped: " << path << ": " << kWhy << '\n';
}

bool IsPartitionDirName(const std::string& name) {
  size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return false;
  return std::all_of(name.begin() + static_cast<long>(dash) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// Verifies `path` as storage::VerifyPath does; a data directory partition by partition, with a
// progress line on a terminal's stderr once the work has taken a second.
// *partitions counts the partition directories checked (an empty one, of a new topic, holds no
// segment yet).
Status VerifyWithProgress(const std::string& path, const storage::ScanOptions& options,
                          storage::VerifyReport* report, int64_t* partition_count) {
  *partition_count = 0;
  if (!IsDirectory(path)) return storage::VerifyPath(path, options, report);
  if (IsPartitionDirName(BaseName(path))) {
    *partition_count = 1;
    return storage::VerifyPath(path, options, report);
  }
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(path));
  std::vector<std::string> partitions;
  for (const auto& n : names) {
    if (n.size() > 4 && n.compare(n.size() - 4, 4, format::kLogSuffix) == 0)
      return storage::VerifyPath(path, options, report);  // segments here: a partition
    if (IsPartitionDirName(n) && IsDirectory(JoinPath(path, n))) partitions.push_back(n);
  }
  const bool show = client::IsTerminal(2);
  const int64_t start = MonotonicMs();
  int64_t last = 0;
  bool shown = false;
  for (size_t i = 0; i < partitions.size(); ++i) {
    SILT_TRY(storage::VerifyPath(JoinPath(path, partitions[i]), options, report));
    const int64_t now = MonotonicMs();
    if (show && now - start >= client::ProgressDelayMs() && now - last >= 250) {
      last = now;
      std::fprintf(stderr, "\r\033[Kverifying %s: %zu of %zu partitions", path.c_str(), i + 1,
                   partitions.size());
      shown = true;
    }
  }
  if (shown) std::fprintf(stderr, "\r\033[K");
  *partition_count = static_cast<int64_t>(partitions.size());
  return Status::OK();
}

int Run(const VerifyFlags& f, const GlobalOptions&) {
  storage::ScanOptions options;
  options.check_records = !f.shallow;
  storage::VerifyReport report;
  std::vector<std::string> skipped;
  for (const auto& p : f.paths) {
    if (PathExists(p) && !IsDirectory(p) && !IsSegmentFileName(p)) {
      skipped.push_back(p);
      continue;
    }
    const int64_t files_before = report.files;
    int64_t partitions = 0;
    Status s = VerifyWithProgress(p, options, &report, &partitions);
    if (!s.ok()) return Fail(s);
    // A directory that holds no partition and no segment is a wrong path, not a clean log.
    if (IsDirectory(p) && report.files == files_before && partitions == 0) {
      auto names = ListDir(p);
      std::string held = names.ok() && !names->empty()
                             ? " (it holds " + std::to_string(names->size()) +
                                   " entries, none a partition directory or segment file)"
                             : " (it is empty)";
      return Fail("no segment files under " + p + held);
    }
  }
  for (const auto& p : skipped) PrintSkipped(p, f.json);
  if (skipped.size() == f.paths.size()) {
    std::cout.flush();
    return Fail(skipped.size() == 1 ? skipped[0] + " is not a segment file; nothing checked"
                                    : "none of the paths is a segment file; nothing checked");
  }
  for (const auto& p : report.problems) PrintProblem(p, f.json);


  bool repaired = false;
  storage::RepairResult totals;
  if ((f.repair || f.dry_run) && !report.clean()) {
    std::set<std::string> partitions;
    for (const auto& p : report.problems) partitions.insert(PartitionOf(p.file));
    const bool show = client::IsTerminal(2) && partitions.size() > 1;
    const int64_t start = MonotonicMs();
    int64_t last = 0;
    bool shown = false;
    size_t done = 0;
    for (const auto& dir : partitions) {
      auto result = storage::RepairPartition(dir, options, f.dry_run);
      if (!result.ok()) return Fail(result.status());
      if (shown) std::fprintf(stderr, "\r\033[K");
      shown = false;
      for (const auto& a : result->actions) {
        if (f.json)
          std::cout << nlohmann::ordered_json{{f.dry_run ? "dry_run" : "repair", a.description}}.dump()
                    << '\n';
        else
          std::cout << (f.dry_run ? "dry run: " : "repair: ") << a.description << '\n';
      }
      totals.records_kept += result->records_kept;
      totals.bytes_kept += result->bytes_kept;
      totals.records_quarantined += result->records_quarantined;
      totals.bytes_quarantined += result->bytes_quarantined;
      ++done;
      const int64_t now = MonotonicMs();
      if (show && now - start >= client::ProgressDelayMs() && now - last >= 250) {
        last = now;
        std::cout.flush();
        std::fprintf(stderr, "\r\033[K%s: %zu of %zu partitions",
                     f.dry_run ? "planning repair" : "repairing", done, partitions.size());
        shown = true;
      }
    }
    if (shown) std::fprintf(stderr, "\r\033[K");
    repaired = !f.dry_run;
  }
  if (repaired) {
    // Check again: the exit status says whether the data is clean now.
    storage::VerifyReport after;
    for (const auto& p : f.paths) {
      if (std::find(skipped.begin(), skipped.end(), p) != skipped.end()) continue;
      std::string path = p;
      if (!PathExists(path)) path = DirName(path);  // a file moved to quarantine
      Status s = storage::VerifyPath(path, options, &after);
      if (!s.ok()) return Fail(s);
    }
    for (const auto& p : after.problems) PrintProblem(p, f.json);
    report = std::move(after);  // the summary describes the data as it is now
  }
  const bool counted = (f.repair || f.dry_run) && (totals.bytes_quarantined > 0 || repaired);

  int64_t batches = 0, records = 0, bytes = 0;
  for (const auto& s : report.segments) {
    batches += s.entries;
    records += s.records;
    bytes += s.file_size;
  }
  if (f.quiet) {
    // Problems only, in either format: the exit status says whether there were any.
  } else if (f.json) {
    nlohmann::ordered_json j = {{"summary",
                         {{"files", report.files},
                          {"batches", batches},
                          {"records", records},
                          {"bytes", bytes},
                          {"problems", report.problems.size()},
                          {"repaired", repaired},
                          {"clean", report.clean()}}}};
    if (counted) {
      auto& sum = j["summary"];
      sum["dry_run"] = f.dry_run;
      sum["records_kept"] = totals.records_kept;
      sum["bytes_kept"] = totals.bytes_kept;
      sum["records_quarantined"] = totals.records_quarantined;
      sum["bytes_quarantined"] = totals.bytes_quarantined;
    }
    std::cout << j.dump() << '\n';
  } else {
    // Sizes for people on a terminal (as silt(1) promises), exact bytes in a pipe.
    auto sized = [](int64_t n) {
      return client::IsTerminal(1) ? client::HumanBytes(n) : std::to_string(n) + " bytes";
    };
    const std::string size = sized(bytes);
    if (counted) {
      auto recs = [](int64_t n) { return std::to_string(n) + (n == 1 ? " record" : " records"); };
      std::cout << (f.dry_run ? "repair would keep " : "repair kept ") << recs(totals.records_kept)
                << " (" << sized(totals.bytes_kept) << ") and "
                << (f.dry_run ? "quarantine " : "quarantined ")
                << recs(totals.records_quarantined) << " (" << sized(totals.bytes_quarantined)
                << ")\n";
    }
    std::cout << "checked " << report.files << " files, " << batches << " batches, " << records
              << " records, " << size << ": ";
    if (report.clean())
      std::cout << (repaired ? "clean after repair" : "clean") << '\n';
    else
      std::cout << report.problems.size() << " problem" << (report.problems.size() == 1 ? "" : "s")
                << '\n';
  }
  std::cout.flush();
  return report.clean() ? kExitOk : kExitProblem;
}

}  // namespace

RunFn RegisterVerifyCrc(CLI::App* sub, GlobalOptions* global) {
  auto f = std::make_shared<VerifyFlags>();
  sub->add_option("path", f->paths,
                  "segment files (.log, .index, .timeindex), partition directories or data "
                  "directories to check")
      ->required()
      ->type_name("PATH");
  auto* repair = sub->add_flag("--repair", f->repair,
                "keep every valid batch: move only the damaged bytes of each segment to "
                "quarantine files, rebuild indexes");
  sub->add_flag("--dry-run", f->dry_run,
                "show what --repair would keep and quarantine (records and bytes), change nothing")
      ->excludes(repair);
  sub->add_option("--format", f->format,
                  "text, or json: one JSON object per line, each problem, then a summary")
      ->check(OneOf({"text", "json"}));
  sub->add_flag("--json", f->json, "the same as --format json");
  sub->add_flag("-q,--quiet", f->quiet, "print problems only, no summary (text or JSON)");
  sub->add_flag("--shallow", f->shallow,
                "check batch headers and CRCs only, without decoding the records");
  return [f, global] {
    if (f->format == "json") f->json = true;
    return Run(*f, *global);
  };
}

}  // namespace silt::cmd
