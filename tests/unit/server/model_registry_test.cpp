// ModelRegistry with a counting loader: the default loads first and once, concurrent
// requests share one load, the least recently used goes when too many are loaded or memory
// is short, each load learns how many models may share the device with it, a model stays
// alive while a request holds it, and a failed load fails only its requests (the next one
// tries again).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "server/model_registry.h"

namespace gufo::server {
namespace {

struct Counts {
  std::atomic<int> loads{0};
  std::atomic<int> alive{0};
  std::vector<LoadRoom> rooms;  // each load's, in order (the tests load one model at a time)
};

class FakeModel final : public LoadedModel {
 public:
  FakeModel(std::string name, Counts& counts) : counts_(counts) {
    served_.name = std::move(name);
    ++counts_.alive;
  }
  ~FakeModel() override { --counts_.alive; }
  const ServedModel& served() const override { return served_; }

 private:
  Counts& counts_;
  ServedModel served_;
};

std::vector<ModelSource> sources(std::initializer_list<const char*> names) {
  std::vector<ModelSource> out;
  for (const char* name : names) out.push_back({.name = name, .path = std::string("/nonexistent/") + name + ".gguf"});
  return out;
}

ModelRegistry::Loader counting_loader(Counts& counts, std::string failing = "") {
  return [&counts, failing](const ModelSource& source, const LoadRoom& room) -> Result<std::unique_ptr<LoadedModel>> {
    ++counts.loads;
    counts.rooms.push_back(room);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long enough for others to wait
    if (source.name == failing) return Error{"bad magic"};
    return std::unique_ptr<LoadedModel>(std::make_unique<FakeModel>(source.name, counts));
  };
}

std::string name_of(const Result<std::shared_ptr<const LoadedModel>>& r) {
  return r.ok() ? (*r)->served().name : "error: " + r.error().message;
}

TEST(ModelRegistry, LoadsOnFirstUseOnceAndEvictsTheLeastRecentlyUsed) {
  Counts counts;
  ModelRegistry registry(sources({"a", "b", "c"}), counting_loader(counts), {.max_loaded = 2, .free_memory = {}});
  EXPECT_EQ(registry.default_name(), "a");
  EXPECT_TRUE(registry.offers("b"));
  EXPECT_TRUE(registry.offers(""));
  EXPECT_FALSE(registry.offers("z"));
  EXPECT_EQ(name_of(registry.acquire("")), "a");
  EXPECT_EQ(name_of(registry.acquire("a")), "a");
  EXPECT_EQ(counts.loads, 1);
  EXPECT_EQ(name_of(registry.acquire("b")), "b");
  EXPECT_EQ(name_of(registry.acquire("a")), "a");  // a is now more recent than b
  EXPECT_EQ(name_of(registry.acquire("c")), "c");  // b goes
  EXPECT_EQ(registry.loaded("b"), nullptr);
  EXPECT_NE(registry.loaded("a"), nullptr);
  EXPECT_EQ(counts.alive, 2);
  EXPECT_EQ(counts.loads, 3);
  std::vector<std::string> loaded;
  for (const ModelRegistry::Status& s : registry.list()) {
    if (s.loaded) loaded.push_back(s.name);
  }
  EXPECT_EQ(loaded, (std::vector<std::string>{"a", "c"}));
}

TEST(ModelRegistry, ConcurrentRequestsShareOneLoad) {
  Counts counts;
  ModelRegistry registry(sources({"a", "b"}), counting_loader(counts), {.max_loaded = 2, .free_memory = {}});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { ok += registry.acquire("b").ok() ? 1 : 0; });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(counts.loads, 1);
}

TEST(ModelRegistry, AHeldModelOutlivesItsEviction) {
  Counts counts;
  ModelRegistry registry(sources({"a", "b"}), counting_loader(counts), {.max_loaded = 1, .free_memory = {}});
  auto held = registry.acquire("a");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(registry.acquire("b").ok());  // a is unloaded from the registry...
  EXPECT_EQ(registry.loaded("a"), nullptr);
  EXPECT_EQ(counts.alive, 2);  // ...but alive while the request holds it
  EXPECT_EQ((*held)->served().name, "a");
  held = Error{"done"};
  EXPECT_EQ(counts.alive, 1);
}

TEST(ModelRegistry, ShortMemoryEvictsBeforeLoading) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "gufo_registry_model.gguf";
  std::ofstream(file) << std::string(1000, 'x');
  Counts counts;
  std::vector<ModelSource> list = {
      {.name = "a", .path = file.string()}, {.name = "b", .path = file.string()}, {.name = "c", .path = file.string()}};
  uint64_t free = 5000;
  ModelRegistry registry(std::move(list), counting_loader(counts),
                         {.max_loaded = 8, .free_memory = [&] { return free; }});
  ASSERT_TRUE(registry.acquire("a").ok());
  ASSERT_TRUE(registry.acquire("b").ok());
  EXPECT_NE(registry.loaded("a"), nullptr);  // 5000 bytes free cover a 1000-byte file
  free = 500;                                // and now they do not: everything else goes
  ASSERT_TRUE(registry.acquire("c").ok());
  EXPECT_EQ(registry.loaded("a"), nullptr);
  EXPECT_EQ(registry.loaded("b"), nullptr);
  EXPECT_EQ(counts.alive, 1);
  std::filesystem::remove(file);
}

std::vector<size_t> sharing_of(const Counts& counts) {
  std::vector<size_t> out;
  for (const LoadRoom& room : counts.rooms) out.push_back(room.sharing);
  return out;
}

TEST(ModelRegistry, EachLoadSharesTheMemoryWithTheModelsThatMayStillLoad) {
  {
    // Three offered, all may stay: the first load shares with two more, the last with none.
    Counts counts;
    ModelRegistry registry(sources({"a", "b", "c"}), counting_loader(counts), {.max_loaded = 8, .free_memory = {}});
    for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(registry.acquire(name).ok());
    EXPECT_EQ(sharing_of(counts), (std::vector<size_t>{3, 2, 1}));
  }
  {
    // Two at a time: a shares with one more; b is the second; c replaces a and is the second.
    Counts counts;
    ModelRegistry registry(sources({"a", "b", "c"}), counting_loader(counts), {.max_loaded = 2, .free_memory = {}});
    for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(registry.acquire(name).ok());
    EXPECT_EQ(sharing_of(counts), (std::vector<size_t>{2, 1, 1}));
  }
  {
    // One model: all of it.
    Counts counts;
    ModelRegistry registry(sources({"a"}), counting_loader(counts), {.max_loaded = 3, .free_memory = {}});
    ASSERT_TRUE(registry.acquire("").ok());
    EXPECT_EQ(sharing_of(counts), (std::vector<size_t>{1}));
  }
}

// A load keeps room for the weights of the largest models still to load, as many as may share
// the device with it.
TEST(ModelRegistry, ALoadKeepsRoomForTheLargestModelsStillToLoad) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gufo_registry_room";
  std::filesystem::create_directories(dir);
  std::vector<ModelSource> list;
  for (const auto& [name, bytes] : {std::pair{"a", 1000}, std::pair{"b", 3000}, std::pair{"c", 2000}}) {
    const std::filesystem::path file = dir / (std::string(name) + ".gguf");
    std::ofstream(file) << std::string(static_cast<size_t>(bytes), 'x');
    list.push_back({.name = name, .path = file.string()});
  }
  Counts counts;
  ModelRegistry registry(list, counting_loader(counts), {.max_loaded = 2, .free_memory = {}});
  ASSERT_TRUE(registry.acquire("a").ok());  // shares with one more: the largest of b and c
  ASSERT_TRUE(registry.acquire("c").ok());  // the second of two: nothing to keep
  ASSERT_EQ(counts.rooms.size(), 2u);
  EXPECT_EQ(counts.rooms[0].sharing, 2u);
  EXPECT_EQ(counts.rooms[0].others_bytes, 3000u);
  EXPECT_EQ(counts.rooms[1].sharing, 1u);
  EXPECT_EQ(counts.rooms[1].others_bytes, 0u);
  Counts all;
  ModelRegistry three(list, counting_loader(all), {.max_loaded = 3, .free_memory = {}});
  ASSERT_TRUE(three.acquire("b").ok());  // shares with two more: a and c
  EXPECT_EQ(all.rooms[0].others_bytes, 3000u);
  std::filesystem::remove_all(dir);
}

TEST(ModelRegistry, AFailedLoadFailsItsRequestsAndTheNextTriesAgain) {
  Counts counts;
  ModelRegistry registry(sources({"a", "bad"}), counting_loader(counts, "bad"), {.max_loaded = 2, .free_memory = {}});
  EXPECT_EQ(name_of(registry.acquire("bad")), "error: model 'bad' could not be loaded: bad magic");
  EXPECT_EQ(name_of(registry.acquire("bad")), "error: model 'bad' could not be loaded: bad magic");
  EXPECT_EQ(counts.loads, 2);
  EXPECT_EQ(name_of(registry.acquire("a")), "a");
}

}  // namespace
}  // namespace gufo::server
