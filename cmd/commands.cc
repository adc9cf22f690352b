#include "cmd/commands.h"

namespace silt::cmd {

RunFn RegisterCluster(CLI::App* sub, GlobalOptions* g);
RunFn RegisterCompletion(CLI::App* sub, GlobalOptions* g);
RunFn RegisterConsume(CLI::App* sub, GlobalOptions* g);
RunFn RegisterDumpSegment(CLI::App* sub, GlobalOptions* g);
RunFn RegisterGroup(CLI::App* sub, GlobalOptions* g);
RunFn RegisterPerf(CLI::App* sub, GlobalOptions* g);
RunFn RegisterProduce(CLI::App* sub, GlobalOptions* g);
RunFn RegisterReplicate(CLI::App* sub, GlobalOptions* g);
RunFn RegisterServe(CLI::App* sub, GlobalOptions* g);
RunFn RegisterTopic(CLI::App* sub, GlobalOptions* g);
RunFn RegisterServe(CLI::App* sub, GlobalOptions* g);
RunFn RegisterVerifyCrc(CLI::App* sub, GlobalOptions* g);

namespace {
const CommandInfo kCommands[] = {
    {"produce", "write records from files or stdin to a topic", RegisterProduce},
    {"consume", "print a topic's records, or follow it like tail -f", RegisterConsume},
    {"topic", "create, list, describe, delete topics and change their configs", RegisterTopic},
    {"group", "list, describe, reset and delete consumer-group positions", RegisterGroup},
    {"cluster", "show brokers, the controller, the metadata quorum and partition leadership",
     RegisterCluster},
    {"dump-segment", "print the batches, records and index entries of segment files",
     RegisterDumpSegment},
    {"verify-crc", "check (and with --repair, fix) segment files, partitions or data dirs",
     RegisterVerifyCrc},
    {"replicate",
     "copy topics between data dirs and clusters, at the same offsets, resumably",
     RegisterReplicate},
    {"perf", "measure produce and consume rates and latencies, like Kafka's perf-test tools",
     RegisterPerf},
    {"serve", "run a broker that speaks the Kafka protocol", RegisterServe},
    {"completion", "print a shell completion script (bash, zsh or fish)", RegisterCompletion},
};
}  // namespace

std::span<const CommandInfo> AllCommands() { return kCommands; }

}  // namespace silt::cmd
