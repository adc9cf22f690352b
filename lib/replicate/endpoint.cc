#include "replicate/endpoint.h"

#include "net/connection.h"
#include "replicate/cluster_sink.h"
#include "replicate/cluster_source.h"
#include "replicate/dir_sink.h"
#include "replicate/dir_source.h"

namespace silt::replicate {

Result<EndpointSpec> ParseEndpoint(std::string_view text) {
  EndpointSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return Status::InvalidArgument("empty SOURCE or DEST: expected a data dir or kafka://HOST:PORT");
  size_t scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) {
    spec.kind = EndpointSpec::Kind::kDataDir;
    spec.dir = std::string(text);
    return spec;
  }
  std::string_view scheme = text.substr(0, scheme_end);
  if (scheme != "kafka")
    return Status::InvalidArgument("'" + std::string(text) + "': unknown scheme '" +
                                   std::string(scheme) +
                                   "://'; expected a data dir path or kafka://HOST:PORT[,HOST:PORT...]");
  std::string_view rest = text.substr(scheme_end + 3);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  auto hosts = net::ParseBootstrap(rest);
  if (!hosts.ok()) return hosts.status().WithContext("'" + std::string(text) + "'");
  if (hosts->empty())
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' names no broker: expected kafka://HOST:PORT[,HOST:PORT...]");
  spec.kind = EndpointSpec::Kind::kCluster;
  for (const auto& hp : *hosts) {
    if (hp.host.empty())
      return Status::InvalidArgument("'" + std::string(text) + "': a broker address has no host");
    std::string host = hp.host.find(':') != std::string::npos ? "[" + hp.host + "]" : hp.host;
    spec.bootstrap.push_back(host + ":" + std::to_string(hp.port));
  }
  return spec;
}

Result<std::unique_ptr<Source>> OpenSource(const EndpointSpec& spec, const OpenOptions& options) {
  if (spec.kind == EndpointSpec::Kind::kDataDir) return OpenDirSource(spec.dir);
  return OpenClusterSource(spec, options);
}

Result<std::unique_ptr<Sink>> OpenSink(const EndpointSpec& spec, const OpenOptions& options) {
  if (spec.kind == EndpointSpec::Kind::kDataDir) return OpenDirSink(spec.dir, options.fsync);
  return MakeClusterSink(spec, options);
}

}  // namespace silt::replicate
