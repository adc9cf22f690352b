// A main() for a fuzz target built without libFuzzer, so that `make test` runs it with the
// ordinary compiler: each file named on the command line is fed to LLVMFuzzerTestOneInput once
// (crash artifacts kept as regression inputs), and with --every-api one small frame per api and
// version of the api table is fed too (empty body, then a body of zeros), so a target that falls
// behind the table traps here rather than only under `make fuzz`.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "base/coding.h"
#include "protocol/api_table.h"
#include "protocol/header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Feed(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

int EveryApi() {
  using namespace silt;
  using namespace silt::protocol;
  int frames = 0;
  for (const ApiInfo& api : SupportedApis()) {
    for (int16_t v = api.min_version; v <= api.max_version; ++v) {
      for (size_t zeros : {0, 64}) {
        std::string frame;
        ByteWriter w(&frame);
        RequestHeader{static_cast<int16_t>(api.key), v, 7, std::string("replay")}
            .Encode(w, RequestHeaderVersion(static_cast<int16_t>(api.key), v));
        frame.append(zeros, '\0');
        Feed(frame);
        ++frames;
      }
    }
  }
  return frames;
}

}  // namespace

int main(int argc, char** argv) {
  int fed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--every-api") {
      fed += EveryApi();
      continue;
    }
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 2;
    }
    Feed(std::string(std::istreambuf_iterator<char>(in), {}));
    ++fed;
  }
  std::printf("replay: %d inputs, no crash\n", fed);
  return 0;
}
