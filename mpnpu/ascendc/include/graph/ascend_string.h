// Host side: ge::AscendString, the graph engine's string (attribute values, operator names): built
// from a C string (with or without a length), read back with GetString / GetLength, compared,
// searched (Find) and hashed. A null or absent name is the empty string.
#ifndef MPNPU_GRAPH_ASCEND_STRING_H
#define MPNPU_GRAPH_ASCEND_STRING_H

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace ge {

using char_t = char;

class AscendString {
public:
    AscendString() = default;
    ~AscendString() = default;
    AscendString(const char_t* const name) : name_(std::make_shared<std::string>(name ? name : "")) {}
    AscendString(const char_t* const name, size_t length)
        : name_(std::make_shared<std::string>(name ? std::string(name, length) : std::string())) {}

    const char_t* GetString() const { return name_ ? name_->c_str() : ""; }
    size_t GetLength() const { return name_ ? name_->size() : 0; }
    // Where `ascend_string` first occurs, or std::string::npos.
    size_t Find(const AscendString& ascend_string) const { return text().find(ascend_string.text()); }
    size_t Hash() const { return std::hash<std::string>()(text()); }

    bool operator<(const AscendString& d) const { return text() < d.text(); }
    bool operator>(const AscendString& d) const { return text() > d.text(); }
    bool operator<=(const AscendString& d) const { return text() <= d.text(); }
    bool operator>=(const AscendString& d) const { return text() >= d.text(); }
    bool operator==(const AscendString& d) const { return text() == d.text(); }
    bool operator!=(const AscendString& d) const { return text() != d.text(); }

private:
    std::string text() const { return name_ ? *name_ : std::string(); }
    std::shared_ptr<std::string> name_;
};

}  // namespace ge

namespace std {
template <>
struct hash<ge::AscendString> {
    size_t operator()(const ge::AscendString& s) const { return s.Hash(); }
};
}  // namespace std

#endif  // MPNPU_GRAPH_ASCEND_STRING_H
