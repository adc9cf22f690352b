// The broker's log: one line per notable event on stderr, each with a UTC timestamp and a level,
// e.g. "2026-01-02T03:04:05.678Z INFO listening on 127.0.0.1:9092". Thread-safe; a line is
// written with one write(2) so lines from different threads never interleave.
#pragma once

#include <string>
#include <string_view>

namespace silt::broker {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug", "info", "warn"/"warning" or "error"; false for anything else.
bool ParseLogLevel(std::string_view name, LogLevel* out);
// Lines below `level` are dropped. The default is kInfo.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Writes one line (a trailing newline is added).
void LogLine(LogLevel level, std::string_view message);

inline void LogDebug(std::string_view m) { if (LogEnabled(LogLevel::kDebug)) LogLine(LogLevel::kDebug, m); }
inline void LogInfo(std::string_view m) { LogLine(LogLevel::kInfo, m); }
inline void LogWarn(std::string_view m) { LogLine(LogLevel::kWarn, m); }
inline void LogError(std::string_view m) { LogLine(LogLevel::kError, m); }

}  // namespace silt::broker
