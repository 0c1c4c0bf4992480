// Reading the settings: the environment first, then the flags (flags win), each value parsed and
// checked against its row of the table (settings.cpp).
#include <cerrno>
#include <cstdlib>

#include "settings/settings.h"

namespace queen::sidecar {

namespace {

// Parse and range-check one value into its field.
Status assign(const SettingSpec& spec, Settings* st, const std::string& value) {
    if (spec.type == SettingType::String) {
        st->*spec.str_field = value;
        return Status::ok();
    }
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0)
        return Status(StatusCode::BadRequest,
                      std::string("--") + spec.name + ": not an integer: " + value);
    if (v < spec.min || v > spec.max)
        return Status(StatusCode::BadRequest, std::string("--") + spec.name + ": " + value +
                                                  " is outside [" + std::to_string(spec.min) +
                                                  ", " + std::to_string(spec.max) + "]");
    st->*spec.int_field = v;
    return Status::ok();
}

// The row of a flag name, or null.
const SettingSpec* find_spec(const std::string& name) {
    for (const auto& spec : setting_specs())
        if (name == spec.name) return &spec;
    return nullptr;
}

// String rows' checks, once every source was read (a bad environment value a flag replaces is
// no error).
Status check_strings(const Settings& st) {
    for (const auto& spec : setting_specs()) {
        if (spec.type != SettingType::String || !spec.valid) continue;
        const std::string& v = st.*spec.str_field;
        if (!spec.valid(v) && spec.secret)  // never echoed: its length only
            return Status(StatusCode::BadRequest,
                          std::string("--") + spec.name + " (" + spec.env + "): expected " +
                              spec.accepts + ", got " + std::to_string(v.size()) +
                              " characters (not shown)");
        if (!spec.valid(v))
            return Status(StatusCode::BadRequest, std::string("--") + spec.name + ": expected " +
                                                      spec.accepts + ", got " + v);
    }
    return Status::ok();
}

}  // namespace

// Environment first, then flags (--name=value or --name value).
Status load_settings(int argc, char** argv, Settings* out, SettingsRequest* request) {
    *request = SettingsRequest::Run;
    for (const auto& spec : setting_specs()) {
        const char* v = std::getenv(spec.env.c_str());
        if (!v) continue;
        Status s = assign(spec, out, v);
        if (!s.is_ok()) return Status(StatusCode::BadRequest, spec.env + ": " + s.message());
    }
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            *request = SettingsRequest::Help;
            return Status::ok();
        }
        if (arg == "--settings-markdown") {
            *request = SettingsRequest::Markdown;
            return Status::ok();
        }
        if (arg == "--print-routes") {
            *request = SettingsRequest::PrintRoutes;
            return Status::ok();
        }
        if (arg.rfind("--", 0) != 0)
            return Status(StatusCode::BadRequest, "unexpected argument: " + arg);
        std::string name = arg.substr(2), value;
        std::size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return Status(StatusCode::BadRequest, "missing value for --" + name);
        }
        const SettingSpec* found = find_spec(name);
        if (!found) return Status(StatusCode::BadRequest, "unknown flag --" + name);
        Status s = assign(*found, out, value);
        if (!s.is_ok()) return s;
    }
    return check_strings(*out);
}

// The bool form (kept for callers that only know --help).
Status load_settings(int argc, char** argv, Settings* out, bool* want_help) {
    SettingsRequest r = SettingsRequest::Run;
    Status s = load_settings(argc, argv, out, &r);
    *want_help = r == SettingsRequest::Help;
    return s;
}

}  // namespace queen::sidecar
