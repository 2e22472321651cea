// PeerWatch through Communicator: a peer that is a process of its own (fork), killed while this
// rank's message to it is half written, fails this rank's wait at once, in every collective.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "neomeg/distributed/communicator.h"

using namespace neomeg;
using namespace neomeg::distributed;
using namespace std::chrono_literals;

namespace {

// A store in the files of a folder, for ranks that are processes. A value is written to a
// temporary file and renamed into place, so a reader sees it whole or not at all.
class FileStore final : public Store {
public:
    explicit FileStore(std::filesystem::path dir) : m_dir(std::move(dir)) {}

    void set(const std::string& key, const std::vector<char>& value) override {
        auto tmp = m_dir / (".tmp" + std::to_string(::getpid()));
        {
            std::ofstream out(tmp, std::ios::binary);
            out.write(value.data(), static_cast<std::streamsize>(value.size()));
        }
        std::filesystem::rename(tmp, path(key));
    }

    std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
        wait({key}, timeout);
        std::ifstream in(path(key), std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

    void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        for (const auto& key : keys)
            while (!std::filesystem::exists(path(key))) {
                if (std::chrono::steady_clock::now() > deadline)
                    throw StoreTimeout("FileStore: no key " + key);
                std::this_thread::sleep_for(1ms);
            }
    }

private:
    std::filesystem::path path(std::string key) const {
        for (auto& c : key)
            if (c == '/')
                c = '%';
        return m_dir / key;
    }

    std::filesystem::path m_dir;
};

// One of Communicator's operations on `bytes` of `buf` (int8), as rank `rank` of 2: rank 0
// sends rank 1 all of it, or its half, before anything it waits for from rank 1.
struct Collective {
    const char* name;
    std::function<void(Communicator&, int rank, std::vector<char>& buf, size_t bytes)> run;
};

// The test's name in gtest's messages, not the struct's bytes.
void PrintTo(const Collective& c, std::ostream* os) {
    *os << c.name;
}

std::vector<char> output(size_t bytes) {
    return std::vector<char>(bytes);
}

const Collective kCollectives[] = {
        {"send",
         [](Communicator& c, int rank, std::vector<char>& buf, size_t bytes) {
             if (rank == 0)
                 c.send(buf.data(), bytes, dnn::dtype::Int8, 1, 7);
             else
                 c.recv(buf.data(), bytes, dnn::dtype::Int8, 0, 7);
         }},
        {"all_reduce",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes);
             c.all_reduce(buf.data(), out.data(), bytes, dnn::dtype::Int8, ReduceOp::Sum);
         }},
        {"reduce",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes);
             c.reduce(buf.data(), out.data(), bytes, dnn::dtype::Int8, ReduceOp::Sum, 1);
         }},
        {"broadcast", [](Communicator& c, int, std::vector<char>& buf,
                         size_t bytes) { c.broadcast(buf.data(), bytes, dnn::dtype::Int8, 0); }},
        {"all_gather",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes);
             c.all_gather(buf.data(), out.data(), bytes / 2, dnn::dtype::Int8);
         }},
        {"gather",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes);
             c.gather(buf.data(), out.data(), bytes / 2, dnn::dtype::Int8, 1);
         }},
        {"scatter",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes / 2);
             c.scatter(buf.data(), out.data(), bytes / 2, dnn::dtype::Int8, 0);
         }},
        {"all_to_all",
         [](Communicator& c, int, std::vector<char>& buf, size_t bytes) {
             auto out = output(bytes);
             c.all_to_all(buf.data(), out.data(), bytes / 2, dnn::dtype::Int8);
         }},
};

}  // namespace

class PeerWatchKill : public ::testing::TestWithParam<Collective> {};

TEST_P(PeerWatchKill, AMessageHalfWrittenToAKilledPeerFailsAtOnce) {
    // Rank 1 starts the collective (posting its receives of 64 MB) and stops (SIGSTOP) before
    // rank 0 starts it: rank 0's pair writes what the sockets hold and queues the rest of its
    // message; then rank 1 is killed. Gloo's pair does not wake the buffer of a queued send
    // when its socket fails: rank 0 waited for the group's timeout (send: until the peer watch
    // aborted the wait; gloo::broadcast, gather, ...: until they were replaced by ours, whose
    // waits the watch aborts too).
    const Collective& collective = GetParam();
    char folder[] = "/tmp/neomeg_peer_watch_XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    const size_t bytes = size_t{64} << 20;
    const auto timeout = 30s;
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            FileStore store(folder);
            Communicator comm(store, "g/", 1, 2, timeout);
            std::thread stopper([] {
                // Long enough for the receives below to be posted and announced to rank 0.
                std::this_thread::sleep_for(500ms);
                ::raise(SIGSTOP);
            });
            stopper.detach();
            std::vector<char> buf(bytes);
            collective.run(comm, 1, buf, bytes);
        } catch (...) {
        }
        ::_exit(1);  // only killed is right
    }
    std::exception_ptr error;
    std::chrono::steady_clock::duration waited{};
    {
        FileStore store(folder);
        Communicator comm(store, "g/", 0, 2, timeout);
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
        ASSERT_TRUE(WIFSTOPPED(status));
        std::vector<char> buf(bytes, 1);
        auto start = std::chrono::steady_clock::now();
        std::thread rank0([&] {
            try {
                collective.run(comm, 0, buf, bytes);
            } catch (...) {
                error = std::current_exception();
            }
            waited = std::chrono::steady_clock::now() - start;
        });
        std::this_thread::sleep_for(200ms);  // the messages are posted and their rest queued
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        rank0.join();
    }
    std::filesystem::remove_all(folder);
    ASSERT_TRUE(error) << collective.name << " with a killed peer succeeded";
    try {
        std::rethrow_exception(error);
    } catch (const CommError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find(std::string(collective.name) + " failed on rank 0 of 2"),
                  std::string::npos)
                << msg;
        EXPECT_NE(msg.find("lost the connection to rank 1"), std::string::npos) << msg;
    }
    EXPECT_LT(waited, timeout / 2);  // a hang guard: without the watch it waited `timeout`
}

INSTANTIATE_TEST_SUITE_P(EveryCollective, PeerWatchKill, ::testing::ValuesIn(kCollectives),
                         [](const auto& p) { return std::string(p.param.name); });
