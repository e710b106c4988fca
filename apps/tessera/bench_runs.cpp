#include "apps/tessera/bench_runs.h"

#include <chrono>
#include <numeric>

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Prefills `tokens` at positions first, first + 1, ... of the lane's sequence.
Status feed(Engine& engine, const SequenceState& seq, std::span<const int32_t> tokens,
            int32_t first) {
  if (tokens.empty()) return ok_status();
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), first);
  return engine.transformer().forward(engine.cache(), seq.id, tokens, positions).status();
}

// The timed part: n tokens from position `depth`, in one forward (pp) or one
// at a time (tg). The tokens are llama-bench's kind: spread over the
// vocabulary, not text.
Result<double> time_once(Engine& engine, const SequenceState& seq, const BenchTest& test) {
  std::vector<int32_t> tokens(static_cast<std::size_t>(test.tokens));
  const int32_t vocab = engine.model().config.vocab_size;
  for (int64_t i = 0; i < test.tokens; ++i)
    tokens[static_cast<std::size_t>(i)] = static_cast<int32_t>(3 + (i * 7919) % (vocab - 3));
  const auto first = static_cast<int32_t>(test.depth);
  const auto start = Clock::now();
  if (test.prompt) {
    RETURN_IF_ERROR(feed(engine, seq, tokens, first));
  } else {
    for (int64_t i = 0; i < test.tokens; ++i)
      RETURN_IF_ERROR(feed(engine, seq, std::span(tokens).subspan(static_cast<std::size_t>(i), 1),
                           first + static_cast<int32_t>(i)));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(test.tokens) / seconds;
}

// A sequence holding the test's depth: begun (open set), and its context
// prefilled.
Status start_at_depth(Engine& engine, SequenceState& seq, const BenchTest& test,
                      std::span<const int32_t> context, bool& open) {
  RETURN_IF_ERROR(engine.begin_sequence(seq));
  open = true;
  return feed(engine, seq, context.first(static_cast<std::size_t>(test.depth)), 0);
}

}  // namespace

std::string BenchTest::name() const {
  std::string n = (prompt ? "pp" : "tg") + std::to_string(tokens);
  if (depth > 0) n += "@d" + std::to_string(depth);
  return n;
}

Result<std::vector<int32_t>> depth_tokens(Engine& engine, const std::string& text, int64_t count) {
  ASSIGN_OR_RETURN(std::vector<int32_t> once, engine.tokenizer().encode(text, true));
  if (once.size() < 2)
    return invalid_argument("the depth's text gives " + std::to_string(once.size()) +
                            " tokens: give a longer --text");
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<std::size_t>(count));
  // Repeats go on after the BOS, as one long document would.
  for (std::size_t i = 0; static_cast<int64_t>(tokens.size()) < count; ++i)
    tokens.push_back(i < once.size() ? once[i] : once[1 + (i - 1) % (once.size() - 1)]);
  return tokens;
}

Result<BenchResult> run_bench_test(Engine& engine, const BenchTest& test,
                                   std::span<const int32_t> context, int repeat) {
  if (static_cast<int64_t>(context.size()) < test.depth)
    return invalid_argument("bench: " + std::to_string(context.size()) + " tokens of context for " +
                            test.name());
  SequenceState seq;
  bool open = false;  // seq is begun
  Status status = start_at_depth(engine, seq, test, context, open);
  BenchResult result;
  uint64_t submitted_before = 0;
  for (int r = 0; r <= repeat && status.ok(); ++r) {  // run 0 warms caches and pages up
    auto speed = time_once(engine, seq, test);
    if (!speed.ok()) {
      status = speed.status();
      break;
    }
    if (r > 0) result.tokens_per_s.push_back(*speed);
    if (r == 0) submitted_before = engine.backend().counters().submissions;
    // Back to the depth for the next run; a store that cannot cut its
    // sequence short starts it again.
    if (r == repeat || engine.cache().truncate(seq.id, test.depth).ok()) continue;
    status = engine.end_sequence(seq);
    open = false;
    if (status.ok()) status = start_at_depth(engine, seq, test, context, open);
  }
  const Status ended = open ? engine.end_sequence(seq) : ok_status();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(ended);
  if (const uint64_t submitted = engine.backend().counters().submissions; submitted > 0)
    result.submissions_per_token = static_cast<double>(submitted - submitted_before) /
                                   static_cast<double>(repeat * test.tokens);
  return result;
}

}  // namespace tessera::cli
