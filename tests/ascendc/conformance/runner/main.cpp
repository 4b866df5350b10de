// The conformance runner's driver: reads the job and the image, runs the calls, writes the image
// back and a report (exit status, vector registers, the trace's local-memory records).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runner.h"

namespace vecconf {

std::map<std::string, Handler>& registry() {
    static std::map<std::string, Handler> r;
    return r;
}

static Job parse(const char* path, uint64_t regs[3], bool& have_regs) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("cannot read ") + path);
    Job job;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string word;
        if (!(ls >> word)) continue;
        if (word == "image") {
            ls >> job.image;
        } else if (word == "tensor") {
            std::string name, tight;
            Tensor t;
            ls >> name >> t.dtype >> t.offset >> t.elems >> tight;
            t.tight = tight == "tight";
            job.tensors[name] = t;
        } else if (word == "regs") {
            std::string a, b, c;
            ls >> a >> b >> c;
            regs[0] = std::strtoull(a.c_str(), nullptr, 0);
            regs[1] = std::strtoull(b.c_str(), nullptr, 0);
            regs[2] = std::strtoull(c.c_str(), nullptr, 0);
            have_regs = true;
        } else if (word == "call") {
            Call c;
            ls >> c.name;
            std::string kv;
            while (ls >> kv) {
                size_t eq = kv.find('=');
                if (eq == std::string::npos) throw std::runtime_error("bad argument " + kv);
                c.kv[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
            job.calls.push_back(c);
        } else {
            throw std::runtime_error("bad job line: " + line);
        }
    }
    return job;
}

}  // namespace vecconf

int main(int argc, char** argv) {
    using namespace vecconf;
    if (argc != 4) {
        std::fprintf(stderr, "usage: vecconf JOB IMAGE_IN IMAGE_OUT\n");
        return 2;
    }
    uint64_t regs[3] = {~0ull, ~0ull, 0};
    bool have_regs = false;
    Job job;
    try {
        job = parse(argv[1], regs, have_regs);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "job: %s\n", e.what());
        return 2;
    }
    std::vector<char> image(job.image);
    {
        std::ifstream in(argv[2], std::ios::binary);
        in.read(image.data(), std::streamsize(image.size()));
        if (!in) {
            std::fprintf(stderr, "cannot read the image %s\n", argv[2]);
            return 2;
        }
    }
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, uint32_t(job.image));
    job.buf = &buf;
    AscendC::LocalTensor<uint8_t> whole = buf.Get<uint8_t>();
    job.buf_offset = whole.mpnpu_offset();
    std::memcpy(whole.mpnpu_addr(), image.data(), image.size());

    mpnpu::CoreState& core = mpnpu::core();
    if (have_regs) {
        core.vec.mask[0] = regs[0];
        core.vec.mask[1] = regs[1];
        core.vec.counter = regs[2] != 0;
    }
    core.tracing = true;
    int rc = 0;
    std::string fault;
    try {
        for (const Call& c : job.calls) {
            std::string key = c.name + "/" + c.s("T") + (c.has("U") ? "/" + c.s("U") : "");
            auto it = registry().find(key);
            if (it == registry().end()) throw std::runtime_error("no handler for " + key);
            it->second(job, c);
        }
    } catch (const mpnpu::Fault& f) {
        rc = 3;
        fault = std::to_string(f.info.kind) + " " + f.info.message;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runner: %s\n", e.what());
        return 2;
    }
    std::memcpy(image.data(), whole.mpnpu_addr(), image.size());
    {
        std::ofstream out(argv[3], std::ios::binary);
        out.write(image.data(), std::streamsize(image.size()));
    }
    std::ofstream rep(std::string(argv[3]) + ".txt");
    rep << "rc " << rc << "\n";
    if (rc) rep << "fault " << fault << "\n";
    rep << "regs " << core.vec.mask[0] << " " << core.vec.mask[1] << " " << (core.vec.counter ? 1 : 0) << " "
        << core.vec.cmp[0] << " " << core.vec.cmp[1] << "\n";
    rep << "acc " << core.vec.acc << "\n";
    // (the trace is kept in chunks: read it as one array)
    std::vector<MpnpuEvent> flat;
    const MpnpuEvent* evs = core.events.data(flat);
    for (size_t i = 0; i < core.events.size(); ++i) {
        const MpnpuEvent& e = evs[i];
        if (e.type != MPNPU_EV_LOCAL) continue;
        if (e.mem == MPNPU_MEM_SPR) {  // the special registers (GetAccVal's accumulator)
            rep << "spr " << char(e.kind) << " " << int(e.pipe) << "\n";
            continue;
        }
        rep << "ev " << char(e.kind) << " " << int(e.pipe) << " " << int64_t(e.start) - int64_t(job.buf_offset) << " "
            << e.run << "\n";
    }
    if (rc) std::printf("FAULT %s\n", fault.c_str());
    return rc;
}
