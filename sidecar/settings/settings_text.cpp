// The settings table (settings.cpp) as text: --help, docs/sidecar.md's table and the
// effective-settings log line.
#include <libpq-fe.h>

#include <string>

#include "settings/settings.h"

namespace queen::sidecar {

namespace {

// An integer as a person reads it: bytes as KiB/MiB/GiB/TiB when exact, otherwise the number.
std::string human_int(const SettingSpec& spec, int64_t v) {
    if (spec.unit == SettingUnit::Bytes && v > 0) {
        static const char* const units[] = {"TiB", "GiB", "MiB", "KiB"};
        for (int i = 0; i < 4; i++) {
            const int64_t u = int64_t(1) << (10 * (4 - i));
            if (v % u == 0) return std::to_string(v / u) + " " + units[i];
        }
    }
    return std::to_string(v);
}

// The default as a person reads it.
std::string human_default(const SettingSpec& spec) {
    if (spec.type == SettingType::Int) return human_int(spec, spec.int_default);
    return std::string("\"") + spec.str_default + "\"";
}

// What values the row accepts.
std::string human_limits(const SettingSpec& spec) {
    if (spec.type == SettingType::Int)
        return "[" + human_int(spec, spec.min) + ", " + human_int(spec, spec.max) + "]";
    return spec.accepts ? spec.accepts : "any string";
}

// Words of text in lines of at most `width` characters, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent, std::size_t width) {
    std::string out, line;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t j = text.find(' ', i);
        if (j == std::string::npos) j = text.size();
        const std::string word = text.substr(i, j - i);
        if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
            out += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
        i = j + 1;
    }
    if (!line.empty()) out += indent + line + "\n";
    return out;
}

// The line that says which settings change at run time.
std::string runtime_line() {
    std::string names;
    for (const auto& spec : setting_specs())
        if (spec.runtime) names += std::string(names.empty() ? "" : ", ") + "--" + spec.name;
    if (names.empty()) return "No setting changes at run time: a change takes a restart.";
    return "Settings that change at run time: " + names + ".";
}

// A libpq connection string with its password hidden (key=value form, URIs included).
std::string redact_conninfo(const std::string& conninfo) {
    if (conninfo.empty()) return conninfo;
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
        PQfreemem(err);
        return "(unparsable, not shown)";
    }
    std::string out;
    for (PQconninfoOption* o = opts; o->keyword; o++) {
        if (!o->val) continue;
        std::string v = std::string(o->keyword) == "password" ? "***" : o->val;
        std::string quoted = "'";
        for (char c : v) {
            if (c == '\'' || c == '\\') quoted.push_back('\\');
            quoted.push_back(c);
        }
        quoted.push_back('\'');
        bool plain = !v.empty() && v.find_first_of(" '\\") == std::string::npos;
        out += std::string(out.empty() ? "" : " ") + o->keyword + "=" + (plain ? v : quoted);
    }
    PQconninfoFree(opts);
    return out;
}

}  // namespace

// One row's value as a flag takes it.
std::string setting_value(const SettingSpec& spec, const Settings& st) {
    if (spec.type == SettingType::Int) return std::to_string(st.*spec.int_field);
    return st.*spec.str_field;
}

// Usage, then per row: the flag, its environment variable, the help, the default and limits.
std::string settings_help() {
    std::string h =
        "usage: queen-sidecar [--flag value | --flag=value]...\n"
        "       queen-sidecar --help | --settings-markdown | --print-routes\n\n"
        "Every flag can also be given by its environment variable; a flag wins.\n";
    h += runtime_line() + "\n\n";
    for (const auto& spec : setting_specs()) {
        std::string flag =
            std::string("  --") + spec.name + (spec.type == SettingType::Int ? " N" : " TEXT");
        h += flag + std::string(flag.size() < 34 ? 34 - flag.size() : 1, ' ') + spec.env + "\n";
        h += wrap(spec.help, "      ", 100);
        h += "      default " + human_default(spec) + "; accepts " + human_limits(spec) + "\n";
    }
    h += "\n  --settings-markdown             print docs/sidecar.md's settings table\n";
    h += "  --print-routes                  print the route table, one row a line, in the order rows\n"
         "                                  are tried: METHOD (* = any) TAB PATTERN TAB QUERY KEY\n"
         "                                  (- = none)\n";
    return h;
}

// The Markdown table of docs/sidecar.md, and the run-time line.
std::string settings_markdown() {
    std::string m = "| flag | env | default | accepts | what |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& spec : setting_specs()) {
        const bool quoted = spec.type == SettingType::String && *spec.str_default;
        const std::string def = quoted ? "`" + std::string(spec.str_default) + "`"
                                : spec.type == SettingType::Int ? human_default(spec)
                                                                : "`" + human_default(spec) + "`";
        m += std::string("| `--") + spec.name + "` | `" + spec.env + "` | " + def + " | " +
             human_limits(spec) + " | " + spec.help + " |\n";
    }
    m += "\n" + runtime_line() + "\n";
    return m;
}

// "listen=127.0.0.1:6632 pg='' pool-size=4 ...": every row, the --pg password hidden.
std::string settings_effective(const Settings& st) {
    std::string line;
    for (const auto& spec : setting_specs()) {
        std::string v = setting_value(spec, st);
        if (spec.has_password) v = redact_conninfo(v);
        if (spec.secret && !v.empty()) v = "***";
        if (spec.type == SettingType::String)
            v = v.empty() || v.find(' ') != std::string::npos ? "\"" + v + "\"" : v;
        line += std::string(line.empty() ? "" : " ") + spec.name + "=" + v;
    }
    return line;
}

}  // namespace queen::sidecar
