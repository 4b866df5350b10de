// ReadFile / WriteFile for tests and samples that read inputs from .bin files and write outputs to them.
#ifndef MPNPU_DATA_UTILS_H
#define MPNPU_DATA_UTILS_H

#include <cstdio>
#include <fstream>
#include <string>

#ifndef ERROR_LOG
#define ERROR_LOG(fmt, ...) std::fprintf(stdout, "[ERROR]  " fmt "\n", ##__VA_ARGS__)
#endif
#ifndef INFO_LOG
#define INFO_LOG(fmt, ...) std::fprintf(stdout, "[INFO]  " fmt "\n", ##__VA_ARGS__)
#endif

// Reads the whole file into buffer (at most bufferSize bytes); fileSize gets its size.
inline bool ReadFile(const std::string& filePath, size_t& fileSize, void* buffer, size_t bufferSize) {
    std::ifstream in(filePath, std::ios::binary | std::ios::ate);
    if (!in) {
        ERROR_LOG("cannot open %s", filePath.c_str());
        return false;
    }
    std::streamsize size = in.tellg();
    if (size <= 0 || size_t(size) > bufferSize) {
        ERROR_LOG("%s has %lld bytes, the buffer %zu", filePath.c_str(), (long long)size, bufferSize);
        return false;
    }
    in.seekg(0);
    in.read(static_cast<char*>(buffer), size);
    fileSize = size_t(size);
    return bool(in);
}

inline bool WriteFile(const std::string& filePath, const void* buffer, size_t size) {
    std::ofstream out(filePath, std::ios::binary | std::ios::trunc);
    if (!out || !buffer) {
        ERROR_LOG("cannot write %s", filePath.c_str());
        return false;
    }
    out.write(static_cast<const char*>(buffer), std::streamsize(size));
    return bool(out);
}

#endif  // MPNPU_DATA_UTILS_H
