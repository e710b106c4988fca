// tessera.v1.Runtime in process, through a real channel: sessions that keep
// their K/V across calls, against the engine's own decoding; every status
// the proto promises; a client that cancels mid-stream; many clients.
#include "apps/tessera/serve/grpc_service.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "proto/tessera/v1/runtime.grpc.pb.h"
#include "tests/model/engine_test_util.h"
#include "tests/serve/serve_configs.h"

namespace tessera::serve {
namespace {

namespace v1 = tessera::v1;

using testing_configs::kConfig;
using testing_configs::kEndless;

class Served {
 public:
  explicit Served(const std::string& config = kConfig, std::vector<std::string> keys = {}) {
    engine_ = testing::make_engine("stories260K.gguf", config);
    if (engine_ == nullptr) return;
    runtime_ = std::make_unique<SessionRuntime>(*engine_, SessionLimits{});
    server_ = std::make_unique<GrpcServer>(*engine_, *runtime_,
                                           GrpcOptions{"127.0.0.1:0", std::move(keys)});
    const Status started = server_->start();
    EXPECT_TRUE(started.ok()) << started.to_string();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
  }
  ~Served() {
    if (runtime_) runtime_->shutdown();
    if (server_) server_->stop();
  }
  bool ok() const { return engine_ != nullptr && channel_ != nullptr; }
  Engine& engine() { return *engine_; }
  std::unique_ptr<v1::Runtime::Stub> stub() const { return v1::Runtime::NewStub(channel_); }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<SessionRuntime> runtime_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

std::string create(v1::Runtime::Stub& stub, std::optional<uint64_t> seed = std::nullopt) {
  grpc::ClientContext context;
  v1::CreateSessionRequest request;
  if (seed) request.set_seed(*seed);
  v1::CreateSessionResponse response;
  const grpc::Status status = stub.CreateSession(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.session_id();
}

grpc::Status append(v1::Runtime::Stub& stub, const std::string& id,
                    const std::vector<int32_t>& tokens, int64_t* history = nullptr) {
  grpc::ClientContext context;
  v1::AppendTokensRequest request;
  request.set_session_id(id);
  for (const int32_t t : tokens) request.add_tokens(t);
  v1::AppendTokensResponse response;
  const grpc::Status status = stub.AppendTokens(&context, request, &response);
  if (history != nullptr) *history = response.history_tokens();
  return status;
}

struct Turn {
  std::vector<int32_t> tokens;
  std::string text, stop_reason;
  grpc::Status status;
};

Turn generate(v1::Runtime::Stub& stub, const std::string& id, int64_t max_tokens) {
  grpc::ClientContext context;
  v1::GenerateRequest request;
  request.set_session_id(id);
  request.set_max_tokens(max_tokens);
  request.set_ignore_eos(true);
  auto reader = stub.Generate(&context, request);
  Turn turn;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    if (response.has_token()) {
      turn.tokens.push_back(response.token().id());
      turn.text += response.token().text();
    } else {
      turn.stop_reason = response.end().stop_reason();
    }
  }
  turn.status = reader->Finish();
  return turn;
}

std::vector<int32_t> encode(Engine& engine, const std::string& text, bool bos = true) {
  return *engine.tokenizer().encode(text, bos, !bos);
}

std::vector<int32_t> fresh(Engine& engine, const std::vector<int32_t>& history, int64_t count) {
  GenerationRequest request;
  request.prompt = history;
  request.max_new_tokens = count;
  request.stop_at_eos = false;
  std::vector<int32_t> out;
  EXPECT_TRUE(engine
                  .generate(request,
                            [&](int32_t t, int) {
                              out.push_back(t);
                              return true;
                            })
                  .ok());
  return out;
}

TEST(GrpcService, TurnsKeepTheHistoryAcrossCalls) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const std::string id = create(*stub);
  ASSERT_EQ(id.size(), 32u);
  std::vector<int32_t> history = encode(served.engine(), "Once upon a time");
  int64_t held = 0;
  ASSERT_TRUE(append(*stub, id, history, &held).ok());
  EXPECT_EQ(held, static_cast<int64_t>(history.size()));
  for (const std::string more : {" Tom ran.", " The end."}) {
    const Turn turn = generate(*stub, id, 12);
    ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
    EXPECT_EQ(turn.stop_reason, "max_tokens");
    EXPECT_EQ(turn.tokens, fresh(served.engine(), history, 12));
    // The streamed text is what the turn adds to the history's text (its
    // first token read after the history's last, leading space and all).
    const std::string before = served.engine().tokenizer().decode(history);
    history.insert(history.end(), turn.tokens.begin(), turn.tokens.end());
    EXPECT_EQ(turn.text, served.engine().tokenizer().decode(history).substr(before.size()));
    grpc::ClientContext context;
    v1::GetSessionInfoRequest request;
    request.set_session_id(id);
    v1::SessionInfo info;
    ASSERT_TRUE(stub->GetSessionInfo(&context, request, &info).ok());
    EXPECT_EQ(info.history_tokens(), static_cast<int64_t>(history.size()));
    EXPECT_EQ(info.cached_tokens(), info.history_tokens() - 1);  // never fed again
    const std::vector<int32_t> next = encode(served.engine(), more, false);
    ASSERT_TRUE(append(*stub, id, next).ok());
    history.insert(history.end(), next.begin(), next.end());
  }
}

TEST(GrpcService, EveryPromisedStatus) {
  Served served(kConfig, {"key-a", "key-b"});
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  {
    grpc::ClientContext context;  // no key
    v1::CreateSessionResponse response;
    EXPECT_EQ(stub->CreateSession(&context, {}, &response).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  const auto with_key = [](grpc::ClientContext& context, const char* key) {
    context.AddMetadata("authorization", std::string("Bearer ") + key);
  };
  std::string id;
  {
    grpc::ClientContext context;
    with_key(context, "key-a");
    v1::CreateSessionResponse response;
    ASSERT_TRUE(stub->CreateSession(&context, {}, &response).ok());
    id = response.session_id();
  }
  const auto append_as = [&](const char* key, const std::string& session,
                             std::vector<int32_t> tokens) {
    grpc::ClientContext context;
    with_key(context, key);
    v1::AppendTokensRequest request;
    request.set_session_id(session);
    for (const int32_t t : tokens) request.add_tokens(t);
    v1::AppendTokensResponse response;
    return stub->AppendTokens(&context, request, &response);
  };
  EXPECT_EQ(append_as("key-b", id, {1}).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(append_as("key-a", "feedface", {1}).error_code(), grpc::StatusCode::NOT_FOUND);
  const grpc::Status oov = append_as("key-a", id, {1, 100000});
  EXPECT_EQ(oov.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(oov.error_message().find("outside this model's vocabulary"), std::string::npos);
  {
    grpc::ClientContext context;
    with_key(context, "key-a");
    v1::GenerateRequest request;
    request.set_session_id(id);
    request.set_max_tokens(int64_t{1} << 40);
    auto reader = stub->Generate(&context, request);
    v1::GenerateResponse response;
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext context;
    with_key(context, "key-a");
    v1::CloseSessionRequest request;
    request.set_session_id(id);
    v1::CloseSessionResponse response;
    ASSERT_TRUE(stub->CloseSession(&context, request, &response).ok());
  }
  const grpc::Status closed = append_as("key-a", id, {1});
  EXPECT_EQ(closed.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(closed.error_message().find("closed by its owner"), std::string::npos);
}

// Bytes that are no protobuf, sent as a method's request: gRPC refuses them
// before any handler runs, and the server goes on serving.
TEST(GrpcService, AMalformedRequestIsRefusedAndTheServerGoesOn) {
  Served served;
  ASSERT_TRUE(served.ok());
  grpc::GenericStub generic(served.channel());
  const std::string garbage = "\x0a\xff\xff\xff\xff\x0f\x12";  // a length past the end
  grpc::Slice slice(garbage);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, "/tessera.v1.Runtime/AppendTokens", grpc::StubOptions(), &request,
                    &response, [&done](grpc::Status status) { done.set_value(status); });
  const grpc::Status status = done.get_future().get();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  auto stub = served.stub();
  EXPECT_FALSE(create(*stub).empty());  // still serving
}

TEST(GrpcService, ACancelledStreamLeavesTheSessionUsable) {
  Served served(kEndless);
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const std::string id = create(*stub);
  ASSERT_TRUE(append(*stub, id, encode(served.engine(), "Once upon a time")).ok());
  {
    grpc::ClientContext context;
    v1::GenerateRequest request;
    request.set_session_id(id);
    request.set_max_tokens(1 << 24);  // hours of tokens: only the cancel ends it
    request.set_ignore_eos(true);
    auto reader = stub->Generate(&context, request);
    v1::GenerateResponse response;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(reader->Read(&response));
    context.TryCancel();
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  grpc::Status appended;
  for (int tries = 0; tries < 3000; ++tries) {
    appended = append(*stub, id, {1});
    if (appended.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(appended.ok()) << appended.error_message();
  EXPECT_EQ(generate(*stub, id, 4).tokens.size(), 4u);
}

// A session picks what drafts for it among the server's proposers: greedy
// tokens are plain decoding's either way; only the drafting one drafts. A
// proposer or verifier the server does not run is refused, naming the choices.
TEST(GrpcService, ASessionPicksItsProposer) {
  Served served(std::string(kConfig) +
                "[decode]\nproposer = \"ngram\"\nalternate_proposers = [\"none\"]\n");
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const auto create_with = [&](const char* proposer, const char* verifier, std::string& id) {
    grpc::ClientContext context;
    v1::CreateSessionRequest request;
    request.mutable_sampling()->set_temperature(0);
    if (proposer != nullptr) request.set_proposer(proposer);
    if (verifier != nullptr) request.set_verifier(verifier);
    v1::CreateSessionResponse response;
    const grpc::Status status = stub->CreateSession(&context, request, &response);
    id = response.session_id();
    return status;
  };
  const std::vector<int32_t> history =
      encode(served.engine(), "Once upon a time, there was a little girl. The little girl");
  const std::vector<int32_t> plain = fresh(served.engine(), history, 40);
  for (const char* proposer : {static_cast<const char*>(nullptr), "none", "ngram"}) {
    std::string id;
    ASSERT_TRUE(create_with(proposer, "ar", id).ok());
    ASSERT_TRUE(append(*stub, id, history).ok());
    grpc::ClientContext context;
    v1::GenerateRequest request;
    request.set_session_id(id);
    request.set_max_tokens(40);
    request.set_ignore_eos(true);
    auto reader = stub->Generate(&context, request);
    std::vector<int32_t> tokens;
    v1::GenerateResponse event, end;
    while (reader->Read(&event)) {
      if (event.has_token()) tokens.push_back(event.token().id());
      if (event.has_end()) end = event;
    }
    ASSERT_TRUE(reader->Finish().ok());
    const std::string name = proposer == nullptr ? "ngram" : proposer;
    EXPECT_EQ(tokens, plain) << name;
    EXPECT_EQ(end.end().generated(), 40);
    if (name == "none") {
      EXPECT_EQ(end.end().drafted(), 0);
      EXPECT_EQ(end.end().steps(), 40);
    } else {
      EXPECT_GT(end.end().drafted(), 0) << "the story repeats itself: n-grams draft";
      EXPECT_LT(end.end().steps(), 40) << "accepted drafts save forwards";
    }
    grpc::ClientContext info_context;
    v1::GetSessionInfoRequest info_request;
    info_request.set_session_id(id);
    v1::SessionInfo info;
    ASSERT_TRUE(stub->GetSessionInfo(&info_context, info_request, &info).ok());
    EXPECT_EQ(info.proposer(), name);
  }
  std::string id;
  const grpc::Status unknown = create_with("tree", nullptr, id);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(unknown.error_message().find("(ngram, none;"), std::string::npos)
      << unknown.error_message();
  const grpc::Status verifier = create_with(nullptr, "restored", id);
  EXPECT_EQ(verifier.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(verifier.error_message().find("decode.verifier = \"ar\""), std::string::npos);
}

TEST(GrpcService, AForkContinuesLikeItsSource) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const std::string id = create(*stub);
  ASSERT_TRUE(append(*stub, id, encode(served.engine(), "Once upon a time")).ok());
  ASSERT_TRUE(generate(*stub, id, 6).status.ok());
  grpc::ClientContext context;
  v1::ForkSessionRequest request;
  request.set_session_id(id);
  v1::CreateSessionResponse fork;
  ASSERT_TRUE(stub->ForkSession(&context, request, &fork).ok());
  EXPECT_EQ(generate(*stub, id, 10).tokens, generate(*stub, fork.session_id(), 10).tokens);
}

TEST(GrpcService, TokenizeAndDetokenizeRoundTrip) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  grpc::ClientContext a;
  v1::TokenizeRequest request;
  request.set_text("Once upon a time");
  request.set_add_bos(true);
  v1::TokenizeResponse tokens;
  ASSERT_TRUE(stub->Tokenize(&a, request, &tokens).ok());
  EXPECT_EQ(std::vector<int32_t>(tokens.tokens().begin(), tokens.tokens().end()),
            encode(served.engine(), "Once upon a time"));
  grpc::ClientContext b;
  v1::DetokenizeRequest back;
  *back.mutable_tokens() = tokens.tokens();
  v1::DetokenizeResponse text;
  ASSERT_TRUE(stub->Detokenize(&b, back, &text).ok());
  EXPECT_NE(text.text().find("Once upon a time"), std::string::npos);
}

TEST(GrpcService, ManyClientsEachGetWhatTheyGetAlone) {
  Served served(std::string(kConfig) + "[sampling]\ntemperature = 0.8\n");
  ASSERT_TRUE(served.ok());
  constexpr int kClients = 16;
  const auto converse = [&](int c) {
    auto stub = served.stub();
    const std::string id = create(*stub, static_cast<uint64_t>(c));
    std::vector<int32_t> all;
    EXPECT_TRUE(
        append(*stub, id, encode(served.engine(), c % 2 ? "Once upon a time" : "The dog")).ok());
    for (int turn = 0; turn < 2; ++turn) {
      const Turn t = generate(*stub, id, 6 + c);
      EXPECT_TRUE(t.status.ok()) << t.status.error_message();
      all.insert(all.end(), t.tokens.begin(), t.tokens.end());
      EXPECT_TRUE(append(*stub, id, {1}).ok());
    }
    return all;
  };
  std::vector<std::vector<int32_t>> together(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) threads.emplace_back([&, c] { together[c] = converse(c); });
  for (std::thread& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(together[c], converse(c)) << "client " << c;
}

v1::SessionInfo session_info(v1::Runtime::Stub& stub, const std::string& id, bool include_history,
                             grpc::Status* status = nullptr, const std::string& key = "") {
  grpc::ClientContext context;
  if (!key.empty()) context.AddMetadata("authorization", "Bearer " + key);
  v1::GetSessionInfoRequest request;
  request.set_session_id(id);
  request.set_include_history(include_history);
  v1::SessionInfo info;
  const grpc::Status got = stub.GetSessionInfo(&context, request, &info);
  if (status != nullptr) *status = got;
  return info;
}

TEST(GrpcService, TheBearerSchemeIsTakenInAnyCase) {
  Served served(kConfig, {"key-a", "key-b"});
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const auto create_with = [&](const std::string& authorization) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", authorization);
    v1::CreateSessionResponse response;
    return stub->CreateSession(&context, {}, &response).error_code();
  };
  for (const char* scheme : {"Bearer", "bearer", "BEARER", "bEaReR"})
    EXPECT_EQ(create_with(std::string(scheme) + " key-b"), grpc::StatusCode::OK) << scheme;
  for (const char* refused :
       {"Basic key-a", "Bearer", "Bearer ", "Bearerkey-a", "Bearer key-", "Bearer key-ab", "key-a"})
    EXPECT_EQ(create_with(refused), grpc::StatusCode::UNAUTHENTICATED) << refused;
}

TEST(GrpcService, AnotherKeyLearnsNothingOfAClosedSession) {
  Served served(kConfig, {"key-a", "key-b"});
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  std::string id;
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer key-a");
    v1::CreateSessionResponse response;
    ASSERT_TRUE(stub->CreateSession(&context, {}, &response).ok());
    id = response.session_id();
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer key-a");
    v1::CloseSessionRequest request;
    request.set_session_id(id);
    v1::CloseSessionResponse response;
    ASSERT_TRUE(stub->CloseSession(&context, request, &response).ok());
  }
  grpc::Status foreign, own;
  session_info(*stub, id, false, &foreign, "key-b");
  EXPECT_EQ(foreign.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(foreign.error_message().find("closed"), std::string::npos) << foreign.error_message();
  EXPECT_NE(foreign.error_message().find("not this key's"), std::string::npos);
  session_info(*stub, id, false, &own, "key-a");
  EXPECT_NE(own.error_message().find("closed by its owner"), std::string::npos);
}

// A 100 KB id comes back in the status cut short: the client can read the
// answer (a whole echo would pass gRPC's metadata limit).
TEST(GrpcService, AHugeSessionIdIsNotEchoedWhole) {
  Served served;
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  grpc::Status status;
  session_info(*stub, std::string(100000, 'f'), false, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
  EXPECT_LT(status.error_message().size(), 200u);
  grpc::ClientContext context;
  v1::CreateSessionRequest request;
  request.set_verifier(std::string(100000, 'v'));
  v1::CreateSessionResponse response;
  const grpc::Status verifier = stub->CreateSession(&context, request, &response);
  EXPECT_EQ(verifier.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(verifier.error_message().size(), 300u);
}

// Unseeded sessions at temperature 1 differ; each reports its seed, and that
// seed replays it.
TEST(GrpcService, AnUnseededSessionDrawsItsSeedAndReportsIt) {
  Served served(std::string(kConfig) + "[sampling]\ntemperature = 1.0\n");
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const std::vector<int32_t> prompt = encode(served.engine(), "Once upon a time");
  const auto run = [&](std::optional<uint64_t> seed, uint64_t& reported) {
    grpc::ClientContext context;
    v1::CreateSessionRequest request;
    if (seed) request.set_seed(*seed);
    v1::CreateSessionResponse response;
    EXPECT_TRUE(stub->CreateSession(&context, request, &response).ok());
    reported = response.seed();
    EXPECT_EQ(session_info(*stub, response.session_id(), false).seed(), reported);
    EXPECT_TRUE(append(*stub, response.session_id(), prompt).ok());
    return generate(*stub, response.session_id(), 24).tokens;
  };
  std::vector<std::vector<int32_t>> replies(3);
  std::vector<uint64_t> seeds(3);
  for (int r = 0; r < 3; ++r) replies[r] = run(std::nullopt, seeds[r]);
  EXPECT_FALSE(replies[0] == replies[1] && replies[1] == replies[2]);
  EXPECT_FALSE(seeds[0] == seeds[1] && seeds[1] == seeds[2]);
  uint64_t replayed = 0;
  EXPECT_EQ(run(seeds[2], replayed), replies[2]);
  EXPECT_EQ(replayed, seeds[2]);
}

// A cancelled turn keeps what it made before the cancel took effect, read
// by the client or not; GetSessionInfo shows the history's ids, beginning
// with the prompt and the tokens the client read.
TEST(GrpcService, AfterACancelledTurnGetSessionInfoShowsTheHistory) {
  Served served(kEndless);
  ASSERT_TRUE(served.ok());
  auto stub = served.stub();
  const std::string id = create(*stub);
  std::vector<int32_t> seen = encode(served.engine(), "Once upon a time");
  ASSERT_TRUE(append(*stub, id, seen).ok());
  {
    grpc::ClientContext context;
    v1::GenerateRequest request;
    request.set_session_id(id);
    request.set_max_tokens(1 << 24);
    request.set_ignore_eos(true);
    auto reader = stub->Generate(&context, request);
    v1::GenerateResponse response;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(reader->Read(&response));
      seen.push_back(response.token().id());
    }
    context.TryCancel();
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  v1::SessionInfo info;
  for (int tries = 0; tries < 3000; ++tries) {
    info = session_info(*stub, id, true);
    if (!info.generating()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(info.generating());
  ASSERT_EQ(info.history_size(), info.history_tokens());
  ASSERT_GE(info.history_size(), static_cast<int>(seen.size()));
  EXPECT_EQ(std::vector<int32_t>(info.history().begin(), info.history().begin() + seen.size()),
            seen);
  EXPECT_EQ(session_info(*stub, id, false).history_size(), 0);  // only when asked
}

}  // namespace
}  // namespace tessera::serve
