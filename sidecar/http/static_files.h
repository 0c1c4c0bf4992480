// A folder of files served read-only over HTTP: Queen's built dashboard (its dist/ folder) at /
// on the sidecar's own port (queen-sidecar --dashboard DIR; docs/sidecar.md, Dashboard and
// CORS). The route that hands it requests is api/dashboard_route.cpp; this part only maps a
// request path to a file of the folder and answers it.
//
// What it answers (GET and HEAD alike; the server sends no body for HEAD):
//   - "/" is index.html; any other path names a regular file below the folder: 200 with the
//     file, a Content-Type by its extension, an ETag (size and modification time; a matching
//     If-None-Match is 304), Cache-Control "public, max-age=31536000, immutable" under assets/
//     (the build's content-hashed names) and "no-cache" elsewhere, X-Content-Type-Options:
//     nosniff;
//   - a path that names no file: index.html when the request accepts text/html (a browser
//     opening one of the dashboard's own paths, e.g. /queues/orders: the dashboard's router
//     reads the path; its history mode), else 404 not_found (a missing script or image);
//   - never a directory listing (a directory is no file), never a file outside the folder: the
//     path is percent-decoded once and refused with 400 bad_request when it holds a NUL, a
//     backslash, a "." or ".." segment or a bad escape; a hidden name (a segment starting with
//     '.') is no file; the file's real path (symlinks resolved) must lie below the folder's
//     real path, and the file is opened without following a symlink;
//   - a file over kMaxFileBytes is not served (404, and a warning in the log each time).
// Files are read on each request (a rebuilt dist/ is served without a restart); nothing is
// written. No locks: the object is immutable after open and read-only afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "http/message.h"

namespace queen::sidecar {

class StaticFiles {
public:
    // The largest file served (a built dashboard's largest file is well under 1 MiB).
    static constexpr int64_t kMaxFileBytes = 16 << 20;

    // Open the folder: it must exist, be a directory and hold a regular index.html; else
    // BadRequest naming what is wrong.
    static Status open(const std::string& dir, std::unique_ptr<StaticFiles>* out);

    // Answer a GET or HEAD of raw_path (the path of the request target, not decoded);
    // headers: the request's (lower-cased names).
    HttpResponse serve(const std::string& raw_path, const HeaderList& headers) const;

    // The folder's real path.
    const std::string& root() const noexcept { return root_; }

private:
    explicit StaticFiles(std::string root) : root_(std::move(root)) {}
    // Read the file at rel (relative to the folder, already checked); false when it is no
    // regular file of the folder (missing, a directory, outside, too large).
    bool read_file(const std::string& rel, std::string* body, std::string* etag) const;
    // The 200 (or 304) answer of a file that was read.
    HttpResponse file_answer(const std::string& rel, std::string body, const std::string& etag,
                             const HeaderList& headers) const;

    std::string root_;  // realpath of the folder, no trailing '/'
};

// The Content-Type of a file name by its extension ("application/octet-stream" when unknown).
const char* static_content_type(const std::string& name);

}  // namespace queen::sidecar
