#include "npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace neomeg::tools {
namespace {

// NumPy's descr for each dtype NeoMeg has; bfloat16 has none.
const std::map<std::string, std::string>& descr_to_dtype() {
    static const std::map<std::string, std::string> m{
            {"<f4", "float32"}, {"<f2", "float16"}, {"|i1", "int8"}, {"|u1", "uint8"},
            {"<i2", "int16"},   {"<i4", "int32"},   {"|b1", "bool"}};
    return m;
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw std::runtime_error(path + ": " + why);
}

// The value of 'key' in the header dict, as the text up to the next top-level comma or brace.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
    auto k = header.find("'" + key + "'");
    if (k == std::string::npos)
        fail(path, "npy header has no '" + key + "'");
    auto colon = header.find(':', k);
    if (colon == std::string::npos)
        fail(path, "malformed npy header");
    size_t i = colon + 1, depth = 0;
    std::string out;
    for (; i < header.size(); ++i) {
        char c = header[i];
        if (c == '(')
            ++depth;
        if (c == ')') {
            if (depth == 0)
                fail(path, "malformed npy header");
            --depth;
        }
        if (depth == 0 && (c == ',' || c == '}'))
            break;
        out += c;
    }
    auto b = out.find_first_not_of(" "), e = out.find_last_not_of(" ");
    return b == std::string::npos ? "" : out.substr(b, e - b + 1);
}

}  // namespace

inference::HostTensor read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, "cannot open");
    std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (file.size() < 10 || file.compare(0, 6, "\x93NUMPY") != 0)
        fail(path, "not a .npy file");
    uint8_t major = static_cast<uint8_t>(file[6]);
    size_t header_len, header_start;
    if (major == 1) {
        header_len = static_cast<uint8_t>(file[8]) | (static_cast<uint8_t>(file[9]) << 8);
        header_start = 10;
    } else if (major == 2 || major == 3) {
        if (file.size() < 12)
            fail(path, "truncated .npy header");
        uint32_t len;
        std::memcpy(&len, file.data() + 8, 4);
        header_len = len;
        header_start = 12;
    } else {
        fail(path, "unsupported .npy version " + std::to_string(major));
    }
    if (header_start + header_len > file.size())
        fail(path, "truncated .npy header");
    std::string header = file.substr(header_start, header_len);
    std::string descr = dict_value(header, "descr", path);
    if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
        fail(path, "malformed descr " + descr);
    descr = descr.substr(1, descr.size() - 2);
    if (descr == "<u1" || descr == "<i1")
        descr[0] = '|';
    auto dt = descr_to_dtype().find(descr);
    if (dt == descr_to_dtype().end())
        fail(path, "dtype " + descr +
                           " is not one NeoMeg reads (float32, float16, int8, uint8, "
                           "int16, int32, bool)");
    if (dict_value(header, "fortran_order", path) != "False")
        fail(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
    std::string shape_text = dict_value(header, "shape", path);
    std::vector<int64_t> shape;
    std::string num;
    for (char c : shape_text) {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            num += c;
        } else if (!num.empty()) {
            shape.push_back(std::stoll(num));
            num.clear();
        }
    }
    size_t elems = 1;
    for (int64_t d : shape)
        if (__builtin_mul_overflow(elems, static_cast<size_t>(d), &elems))
            fail(path, "shape too large");
    size_t data_start = header_start + header_len;
    size_t esize = static_cast<size_t>(descr.back() - '0');  // "<f4": 4 bytes
    if (elems > file.size() || file.size() - data_start != elems * esize)
        fail(path, "holds " + std::to_string(file.size() - data_start) +
                           " data bytes, its shape needs " + std::to_string(elems * esize));
    std::vector<std::byte> bytes(elems * esize);
    std::memcpy(bytes.data(), file.data() + data_start, bytes.size());
    return {dt->second, shape, std::move(bytes)};
}

void write_npy(const std::string& path, const inference::HostTensor& t) {
    std::string descr;
    for (const auto& [d, name] : descr_to_dtype())
        if (name == t.dtype())
            descr = d;
    if (descr.empty())
        throw std::runtime_error(path + ": " + t.dtype() + " has no .npy dtype");
    // As NumPy writes it: "()", "(3,)", "(3, 2)".
    std::string shape = "(";
    for (size_t i = 0; i < t.shape().size(); ++i)
        shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
    shape += t.shape().size() == 1 ? ",)" : ")";
    std::string header =
            "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Data starts 64-byte aligned: magic (6) + version (2) + length (2) + header + '\n'.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    if (!out)
        throw std::runtime_error(path + ": cannot create");
    out.write("\x93NUMPY\x01\x00", 8);
    uint16_t len = static_cast<uint16_t>(header.size());
    char lb[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
    out.write(lb, 2);
    out << header;
    out.write(reinterpret_cast<const char*>(t.bytes().data()),
              static_cast<std::streamsize>(t.bytes().size()));
    if (!out)
        throw std::runtime_error(path + ": write failed");
}

}  // namespace neomeg::tools
