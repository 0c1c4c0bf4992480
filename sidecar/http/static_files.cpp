// The read-only file folder (see static_files.h).
#include "http/static_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "common/log.h"
#include "http/error_response.h"
#include "http/target.h"

namespace queen::sidecar {

namespace {

// The real path of p (symlinks resolved), or false.
bool real_path(const std::string& p, std::string* out) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf) == nullptr) return false;
    *out = buf;
    return true;
}

// The value of a request header (names are lower-cased), or nullptr.
const std::string* header(const HeaderList& h, const char* name) {
    for (const auto& kv : h)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

// Split the decoded path into its segments, refusing what could leave the folder or is no
// file name: NUL, backslash, "." and "..". Empty segments ("//") are skipped. *hidden is set
// when a segment starts with '.'.
bool path_segments(const std::string& path, std::vector<std::string>* segs, bool* hidden) {
    *hidden = false;
    std::string cur;
    auto flush = [&]() {
        if (cur.empty()) return true;
        if (cur == "." || cur == "..") return false;
        if (cur[0] == '.') *hidden = true;
        segs->push_back(cur);
        cur.clear();
        return true;
    };
    for (char c : path) {
        if (c == '\0' || c == '\\') return false;
        if (c == '/') {
            if (!flush()) return false;
        } else {
            cur.push_back(c);
        }
    }
    return flush();
}

// Whether an Accept header asks for HTML (a browser's navigation sends text/html first).
bool accepts_html(const HeaderList& h) {
    const std::string* a = header(h, "accept");
    return a && a->find("text/html") != std::string::npos;
}

// Whether an If-None-Match header names etag (or is "*").
bool etag_matches(const HeaderList& h, const std::string& etag) {
    const std::string* v = header(h, "if-none-match");
    if (!v) return false;
    if (*v == "*") return true;
    std::size_t start = 0;
    while (start < v->size()) {
        std::size_t comma = v->find(',', start);
        if (comma == std::string::npos) comma = v->size();
        std::string tag = v->substr(start, comma - start);
        while (!tag.empty() && tag.front() == ' ') tag.erase(0, 1);
        while (!tag.empty() && tag.back() == ' ') tag.pop_back();
        if (tag.compare(0, 2, "W/") == 0) tag.erase(0, 2);
        if (tag == etag.substr(2)) return true;  // weak comparison (RFC 9110 13.1.2)
        start = comma + 1;
    }
    return false;
}

}  // namespace

// Extension -> media type; text types say their charset (the build writes UTF-8).
const char* static_content_type(const std::string& name) {
    struct Type {
        const char* ext;
        const char* type;
    };
    static const Type kTypes[] = {
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"json", "application/json"},
        {"map", "application/json"},
        {"webmanifest", "application/manifest+json"},
        {"txt", "text/plain; charset=utf-8"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"avif", "image/avif"},
        {"ico", "image/x-icon"},
        {"woff", "font/woff"},
        {"woff2", "font/woff2"},
        {"ttf", "font/ttf"},
        {"otf", "font/otf"},
        {"wasm", "application/wasm"},
    };
    const std::size_t slash = name.rfind('/');
    const std::size_t dot = name.rfind('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
        return "application/octet-stream";
    std::string ext = name.substr(dot + 1);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const Type& t : kTypes)
        if (ext == t.ext) return t.type;
    return "application/octet-stream";
}

// Check the folder and keep its real path.
Status StaticFiles::open(const std::string& dir, std::unique_ptr<StaticFiles>* out) {
    std::string root;
    struct stat st {};
    if (dir.empty() || !real_path(dir, &root) || ::stat(root.c_str(), &st) != 0)
        return Status(StatusCode::BadRequest, "--dashboard " + dir + ": no such folder");
    if (!S_ISDIR(st.st_mode))
        return Status(StatusCode::BadRequest, "--dashboard " + dir + ": not a folder");
    if (root.size() > 1 && root.back() == '/') root.pop_back();
    std::unique_ptr<StaticFiles> f(new StaticFiles(root));
    std::string body, etag;
    if (!f->read_file("index.html", &body, &etag))
        return Status(StatusCode::BadRequest,
                      "--dashboard " + dir + ": no index.html in it (give the built dist/ folder)");
    *out = std::move(f);
    return Status();
}

// Resolve rel below the folder, open it without following a symlink, check it is a regular
// file within the size limit, and read it.
bool StaticFiles::read_file(const std::string& rel, std::string* body, std::string* etag) const {
    std::string real;
    if (!real_path(root_ + "/" + rel, &real)) return false;
    if (real.size() <= root_.size() + 1 || real.compare(0, root_.size(), root_) != 0 ||
        (root_ != "/" && real[root_.size()] != '/'))
        return false;  // outside the folder (a symlink pointing out), or the folder itself
    const int fd = ::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (ok && st.st_size > kMaxFileBytes) {
        QLOG_WARN("dashboard: %s is %lld bytes, over the %lld served: answered 404", real.c_str(),
                  static_cast<long long>(st.st_size), static_cast<long long>(kMaxFileBytes));
        ok = false;
    }
    if (ok) {
        body->resize(static_cast<std::size_t>(st.st_size));
        std::size_t got = 0;
        while (got < body->size()) {
            const ssize_t n = ::read(fd, &(*body)[got], body->size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        body->resize(got);  // a file that shrank while read is answered as read
        char tag[64];
        std::snprintf(tag, sizeof tag, "W/\"%llx-%llx\"", static_cast<unsigned long long>(got),
                      static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ULL +
                          static_cast<unsigned long long>(st.st_mtim.tv_nsec));
        *etag = tag;
    }
    ::close(fd);
    return ok;
}

// 200 with the file (or 304 when the client holds this version) and its headers.
HttpResponse StaticFiles::file_answer(const std::string& rel, std::string body,
                                      const std::string& etag, const HeaderList& headers) const {
    HttpResponse r;
    const bool immutable = rel.compare(0, 7, "assets/") == 0;
    r.headers.emplace_back("Cache-Control",
                           immutable ? "public, max-age=31536000, immutable" : "no-cache");
    r.headers.emplace_back("ETag", etag);
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    if (etag_matches(headers, etag)) {
        r.status = 304;
        r.content_type = nullptr;
        return r;
    }
    r.content_type = static_content_type(rel);
    r.body = std::move(body);
    return r;
}

// Map the path to a file of the folder (see the header for every case).
HttpResponse StaticFiles::serve(const std::string& raw_path, const HeaderList& headers) const {
    std::string path;
    std::vector<std::string> segs;
    bool hidden = false;
    if (!url_decode(raw_path, &path) || !path_segments(path, &segs, &hidden))
        return coded_error(400, ErrorCode::BadRequest,
                           "the path holds a NUL, a backslash, a . or .. segment or a bad escape");
    std::string rel;
    for (const std::string& s : segs) rel += (rel.empty() ? "" : "/") + s;
    if (rel.empty()) rel = "index.html";
    std::string body, etag;
    if (!hidden && read_file(rel, &body, &etag))
        return file_answer(rel, std::move(body), etag, headers);
    if (accepts_html(headers) && read_file("index.html", &body, &etag))
        return file_answer("index.html", std::move(body), etag, headers);
    return coded_error(404, ErrorCode::NotFound, "no file " + raw_path + " in the dashboard");
}

}  // namespace queen::sidecar
