// A StreamsBackend for the engine's tests: every call but append_batch answers at once with
// nothing to say (create: "created"); applied() builds a batch's answers (applied, epoch 0,
// Producer-Seq = the append's seq). stub_append() builds one producer append for the tests.
#pragma once

#include <string>
#include <vector>

#include "streams/backend.h"

namespace queen::sidecar::streams {

class StubStreamsBackend : public StreamsBackend {
public:
    Status create(const CreateArgs&, CreateAnswer* out) override {
        out->status = CreateStatus::Created;
        return Status::ok();
    }
    Status read(const std::string&, const std::string&, int64_t, int64_t, ReadAnswer*) override {
        return Status::ok();
    }
    Status head(const std::string&, HeadAnswer*) override { return Status::ok(); }
    Status remove(const std::string&, RemoveStatus*) override { return Status::ok(); }
    Status gone(const std::string&, bool*) override { return Status::ok(); }

protected:
    // The answers of a batch that applied every append.
    static void applied(const std::vector<const AppendArgs*>& batch, std::vector<AppendAnswer>* out) {
        out->assign(batch.size(), AppendAnswer{});
        for (std::size_t i = 0; i < batch.size(); i++) {
            (*out)[i].status = AppendStatus::Applied;
            (*out)[i].producer_epoch = 0;
            (*out)[i].producer_seq = batch[i]->seq;
        }
    }
};

// An append of producer `producer` (epoch 0) to stream `name` with sequence number `seq`.
inline AppendArgs stub_append(const std::string& name, int64_t seq, const std::string& producer = "p") {
    AppendArgs a;
    a.name = name;
    a.producer = true;
    a.producer_id = producer;
    a.seq = seq;
    return a;
}

}  // namespace queen::sidecar::streams
