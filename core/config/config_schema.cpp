#include "core/config/config_schema.h"

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "core/plugin/plugin_kinds.h"
#include "core/util/strings.h"

namespace tessera {

namespace {

using enum OptionType;

// The keys later tools and docs rely on; renaming one is a breaking change.
constexpr ConfigKey kCoreKeys[] = {
    {.section = "model",
     .spec = {.name = "path",
              .type = kString,
              .default_value = "\"\"",
              .description =
                  "Model file: a .gguf, or a llama2.c .bin checkpoint. A relative name is "
                  "looked up in the config's directory, TESSERA_MODEL_PATH, models/ and "
                  "../shared/models/"},
     .required = true},
    {.section = "model",
     .spec = {.name = "tokenizer",
              .type = kString,
              .default_value = "\"\"",
              .description =
                  "Tokenizer file, looked up like model.path: a llama2.c tokenizer .bin "
                  "(e.g. tok512.bin; required for llama2.c .bin checkpoints), or a Hugging "
                  "Face tokenizer.json (tokenizer_config.json beside it is read too) or a "
                  "GGUF whose vocabulary replaces the model file's own. It must not have "
                  "more tokens than the model's output rows (fewer are padded with unused "
                  "tokens, as llama.cpp's converter does)"}},
    {.section = "backend",
     .spec = {.name = "plugin",
              .type = kString,
              .default_value = "\"cpu\"",
              .description = "Backend plugin that runs the tensor ops"}},
    {.section = "backend",
     .spec = {.name = "threads",
              .type = kInt,
              .default_value = "1",
              .description = "Worker threads of the backend",
              .min = 1,
              .max = 1024}},
    {.section = "backend",
     .spec = {.name = "weights",
              .type = kString,
              .default_value = "\"auto\"",
              .description =
                  "Where the backend keeps the weights: \"mapped\" reads them in place from the "
                  "model file's mapping; \"copied\" copies them into memory the backend owns and "
                  "releases the mapping (once loaded, no more memory than mapped); \"auto\" lets "
                  "the backend choose (cpu: copied when they take at most half the available "
                  "memory, see docs/performance.md)",
              .choices = "auto|mapped|copied"}},
    {.section = "cache",
     .spec = {.name = "plugin",
              .type = kString,
              .default_value = "\"static\"",
              .description = "KV-cache plugin: the policy that decides what is kept and where"}},
    {.section = "cache",
     .spec = {.name = "max_tokens",
              .type = kInt,
              .default_value = "512",
              .description =
                  "Cache capacity of one sequence in tokens (prompt plus generated). The memory "
                  "it asks for is checked against cache.max_memory_mib and the machine's "
                  "available memory before anything is allocated",
              .min = 1,
              .max = 2147483647}},
    {.section = "cache",
     .spec = {.name = "max_memory_mib",
              .type = kInt,
              .default_value = "0",
              .description =
                  "Most memory the KV cache may take, in MiB (2^20 bytes); a config asking for "
                  "more is refused before anything is allocated. 0: no cap of its own, only the "
                  "machine's available memory",
              .min = 0,
              .max = 1073741824}},
    {.section = "cache",
     .spec = {.name = "codec_stage",
              .type = kString,
              .default_value = "\"post_rope\"",
              .description =
                  "Which keys the codec sees and the cache keeps: \"post_rope\" (rotated, what "
                  "attention reads; the default, no work at read time) or \"pre_rope\" (before "
                  "RoPE, rotated when read; where published KV-codec numbers are measured)",
              .choices = "post_rope|pre_rope"}},
    {.section = "cache",
     .spec = {.name = "codec_span",
              .type = kString,
              .default_value = "\"head\"",
              .description =
                  "What one codec vector holds: \"head\" (one vector per KV head, head_dim "
                  "floats; the default, as published codecs are measured) or \"token\" (a "
                  "token's K, or V, across all its KV heads as one vector, so the per-vector "
                  "scales are shared by kv_heads * head_dim floats; pays at small head_dim)",
              .choices = "head|token"}},
    {.section = "cache",
     .spec = {.name = "codec_skip_layers",
              .type = kInt,
              .default_value = "0",
              .description =
                  "The first and the last N layers keep K/V uncompressed (identity codec). 0, "
                  "the default, puts every layer through the codec so its whole effect is "
                  "measured; published lattice deployments keep 2 + 2",
              .min = 0,
              .max = 4096}},
    {.section = "cache",
     .spec = {.name = "swa_full",
              .type = kBool,
              .default_value = "false",
              .description =
                  "Keep every token in a model's sliding-window layers too (llama.cpp's "
                  "--swa-full). By default, over a store that keeps every token, those layers "
                  "(gemma3: 5 of every 6) keep only their window plus decode.max_batch entries, "
                  "in a sink_window store of their own, so their memory stays flat"}},
    {.section = "cache.codec",
     .spec = {.name = "plugin",
              .type = kString,
              .default_value = "\"identity\"",
              .description = "Compressor plugin that encodes the cached K/V"}},
    {.section = "decode",
     .spec = {.name = "proposer",
              .type = kString,
              .default_value = "\"none\"",
              .description =
                  "Proposer plugin that drafts tokens for speculative decoding; \"none\" "
                  "drafts nothing"}},
    {.section = "decode",
     .spec = {.name = "alternate_proposers",
              .type = kString,
              .default_value = "[]",
              .description = "Other proposers a lane may draft with instead of decode.proposer: "
                             "a tessera serve session picks one when it is created (gRPC "
                             "CreateSession.proposer); their options are read from [decode] "
                             "too"},
     .list = true},
    {.section = "decode",
     .spec = {.name = "verifier",
              .type = kString,
              .default_value = "\"ar\"",
              .description = "Verifier plugin that runs the target and decides what is emitted: "
                             "\"ar\" checks drafts autoregressively (plain decoding without "
                             "them); \"block_diffusion\" decodes a block-diffusion model block by "
                             "block"}},
    {.section = "decode",
     .spec = {.name = "max_tokens",
              .type = kInt,
              .default_value = "256",
              .description = "Tokens to generate",
              .min = 0,
              .max = 2147483647}},
    {.section = "decode",
     .spec = {.name = "max_batch",
              .type = kInt,
              .default_value = "128",
              .description =
                  "Tokens one forward carries: the activation scratch is sized for it once. A "
                  "prompt longer than this is fed in chunks; a draft tree, or the drafts of "
                  "several branches verified together, must fit (a clear error otherwise)",
              .min = 1,
              .max = 4096}},
    {.section = "decode",
     .spec = {.name = "branch_layout",
              .type = kString,
              .default_value = "\"bim\"",
              .description =
                  "How the branches of `generate --branch` share their prompt: \"bim\" keeps "
                  "every branch in one sequence with a branch id per entry (the prompt stored "
                  "once; needs a store that keeps branches: static or paged), \"batched\" gives "
                  "each branch its own sequence forked from the prompt (shared blocks on "
                  "paged, copied elsewhere). Both give the same tokens",
              .choices = "bim|batched"}},
    {.section = "sampling",
     .spec = {.name = "temperature",
              .type = kFloat,
              .default_value = "0.0",
              .description = "Softmax temperature; 0 takes the most likely token (greedy). Past a "
                             "few the distribution is close to uniform",
              .min = 0,
              .max = 100}},
    {.section = "sampling",
     .spec = {.name = "top_k",
              .type = kInt,
              .default_value = "0",
              .description = "Sample among the k most likely tokens; 0 turns the filter off",
              .min = 0,
              .max = 2147483647}},
    {.section = "sampling",
     .spec = {.name = "top_p",
              .type = kFloat,
              .default_value = "1.0",
              .description = "Sample among the most likely tokens whose probabilities add up to p "
                             "(nucleus); 1 turns the filter off",
              .min = 0,
              .max = 1},
     .min_exclusive = true},
    {.section = "sampling",
     .spec = {.name = "seed",
              .type = kInt,
              .default_value = "0",
              .description = "Seed of the sampler's random numbers",
              .min = 0}},
    {.section = "sampling",
     .spec = {.name = "presence_penalty",
              .type = kFloat,
              .default_value = "0.0",
              .description = "Subtracted once from the logit of every token the answer has "
                             "already emitted (OpenAI's presence_penalty); 0 turns it off",
              .min = -2,
              .max = 2}},
    {.section = "sampling",
     .spec = {.name = "frequency_penalty",
              .type = kFloat,
              .default_value = "0.0",
              .description = "Subtracted from a token's logit once per time the answer has "
                             "emitted it (OpenAI's frequency_penalty); 0 turns it off",
              .min = -2,
              .max = 2}},
    {.section = "scheduler",
     .spec = {.name = "plugin",
              .type = kString,
              .default_value = "\"single\"",
              .description = "Scheduler plugin that decides which sequences run each step"}},
    {.section = "server",
     .spec = {.name = "http",
              .type = kString,
              .default_value = "\"127.0.0.1:8080\"",
              .description = "Where tessera serve answers HTTP (HOST:PORT); --http overrides it. "
                             "Loopback unless told otherwise"}},
    {.section = "server",
     .spec = {.name = "grpc",
              .type = kString,
              .default_value = "\"\"",
              .description = "Where tessera serve answers the gRPC session API (HOST:PORT); "
                             "--grpc overrides it. Empty: no gRPC"}},
    {.section = "server",
     .spec = {.name = "max_sessions",
              .type = kInt,
              .default_value = "64",
              .description = "Sessions kept at once; at the limit the least recently used idle "
                             "one is evicted to make room",
              .min = 1,
              .max = 1 << 20}},
    {.section = "server",
     .spec = {.name = "session_idle_ttl_s",
              .type = kFloat,
              .default_value = "1800",
              .description = "Seconds a session may sit idle before it is evicted; 0 keeps "
                             "sessions until closed or evicted for room",
              .min = 0,
              .max = 1e9}},
    {.section = "server",
     .spec = {.name = "api_keys",
              .type = kString,
              .default_value = "[]",
              .description = "Keys a request must carry (HTTP 'Authorization: Bearer KEY'); a "
                             "session is seen only by the key that created it. Empty: no key "
                             "asked"},
     .list = true},
    {.section = "server",
     .spec = {.name = "max_sessions_per_key",
              .type = kInt,
              .default_value = "0",
              .description = "Sessions one API key may keep at once; a key at its quota evicts "
                             "its own least recently used idle session, never another key's. "
                             "0: no quota",
              .min = 0,
              .max = 1 << 20}},
    {.section = "server",
     .spec = {.name = "prefix_cache_mib",
              .type = kInt,
              .default_value = "256",
              .description = "MiB of K/V blocks kept after their requests end, keyed by their "
                             "tokens, so a prompt that begins like an earlier one (a chat "
                             "resending its conversation) computes only the rest; least "
                             "recently used blocks go first. Needs cache.plugin = \"paged\" "
                             "(set explicitly on another store it is an error; the default "
                             "then only warns). 0: off",
              .min = 0,
              .max = 1 << 24}},
    {.section = "server",
     .spec = {.name = "queue_timeout_s",
              .type = kFloat,
              .default_value = "30",
              .description = "Seconds an HTTP completion waits for a free session when every one "
                             "is busy; then 503 with Retry-After",
              .min = 0,
              .max = 3600}},
    {.section = "server",
     .spec = {.name = "max_body_bytes",
              .type = kInt,
              .default_value = "4194304",
              .description = "Largest HTTP request body, counted as it is decoded (a gzip body "
                             "is refused with 413 once it inflates past this)",
              .min = 1024,
              .max = 1 << 30}},
    {.section = "server",
     .spec = {.name = "header_timeout_s",
              .type = kFloat,
              .default_value = "10",
              .description = "Seconds a client has from its request's first byte to the end of "
                             "its head; a slower one is closed (408). Slow clients never hold a "
                             "worker",
              .min = 0.1,
              .max = 3600}},
    {.section = "server",
     .spec = {.name = "max_connections_per_address",
              .type = kInt,
              .default_value = "256",
              .description = "HTTP connections one client address may hold open at once; more "
                             "are answered 503. 0: no limit",
              .min = 0,
              .max = 1 << 20}},
    {.section = "server",
     .spec = {.name = "metrics_need_key",
              .type = kBool,
              .default_value = "false",
              .description = "Whether /metrics asks for an API key like /v1 does (/health never "
                             "does)"}},
    {.section = "server",
     .spec = {.name = "chat_template",
              .type = kString,
              .default_value = "\"\"",
              .description =
                  "Chat template of /v1/chat/completions: a built-in name (chatml, "
                  "llama3, gemma) or a Jinja file; empty: the model's own, else chatml"}},
    {.section = "plugins",
     .spec = {.name = "search_path",
              .type = kString,
              .default_value = "[]",
              .description =
                  "Directories searched for plugin libraries before TESSERA_PLUGIN_PATH and "
                  "the built-in ones. With --set: a ':'-separated string"},
     .list = true},
};

constexpr std::array<std::string_view, 9> kSections = {"model",       "backend", "cache",
                                                       "cache.codec", "decode",  "sampling",
                                                       "scheduler",   "server",  "plugins"};

constexpr double kUnbounded = 1e300;  // OptionSpec's "no limit"

// Shortest text that reads back as `x`; integers without a fraction.
std::string format_number(double x, bool integer) {
  if (integer && std::abs(x) < 9.2e18) return std::to_string(static_cast<int64_t>(x));
  return shortest_decimal(x);
}

// Markdown table cells must not contain a bare '|'.
std::string escape_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::span<const ConfigKey> core_config_schema() {
  return kCoreKeys;
}

const ConfigKey* find_core_key(std::string_view section, std::string_view name) {
  for (const auto& key : kCoreKeys)
    if (section == key.section && name == key.spec.name) return &key;
  return nullptr;
}

std::span<const std::string_view> config_sections() {
  return kSections;
}

bool is_config_section(std::string_view section) {
  for (const auto s : kSections)
    if (s == section) return true;
  return false;
}

bool is_plugin_section(std::string_view section) {
  for (const PluginKind& kind : kPluginKinds)
    if (kind.section == section) return true;
  return false;
}

std::string_view config_section_for_kind(std::string_view kind) {
  const PluginKind* found = find_plugin_kind(kind);
  return found ? found->section : std::string_view{};
}

std::string allowed_values_text(const OptionSpec& spec, bool min_exclusive) {
  if (spec.type == OptionType::kString) {
    if (!spec.choices) return "";
    if (spec.choices[0] == '@') return "the name of a " + std::string(spec.choices + 1) + " plugin";
    return "one of: " + join(split(spec.choices, '|'));
  }
  if (spec.type == OptionType::kBool) return "";
  const bool integer = spec.type == OptionType::kInt;
  const bool has_min = spec.min > -kUnbounded;
  const bool has_max = spec.max < kUnbounded;
  const std::string lo = format_number(spec.min, integer);
  const std::string hi = format_number(spec.max, integer);
  if (has_min && has_max) return (min_exclusive ? "(" : "[") + lo + ", " + hi + "]";
  if (has_min) return (min_exclusive ? "> " : ">= ") + lo;
  if (has_max) return "<= " + hi;
  return "";
}

std::string config_reference_markdown() {
  std::string out =
      "| Key | Type | Default | Allowed | Description |\n"
      "|---|---|---|---|---|\n";
  for (const auto& key : kCoreKeys) {
    const std::string type =
        key.list ? "list of strings" : std::string(option_type_name(key.spec.type));
    const std::string default_value =
        key.required ? "required" : "`" + std::string(key.spec.default_value) + "`";
    std::string allowed = allowed_values_text(key.spec, key.min_exclusive);
    if (allowed.empty()) allowed = "any";
    out += "| `" + key.key() + "` | " + type + " | " + escape_cell(default_value) + " | " +
           escape_cell(allowed) + " | " + escape_cell(key.spec.description) + " |\n";
  }
  return out;
}

}  // namespace tessera
