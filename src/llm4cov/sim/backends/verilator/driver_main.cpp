// llm4cov simulation driver: replaces Verilator's generated --main so that every way
// a testbench can end still yields its coverage and a structured end record.
//
// Compiled with -DVL_USER_STOP_MAYBE -DVL_USER_FATAL, so the Verilated runtime calls the
// vl_stop_maybe / vl_fatal defined here:
//   $finish                   -> normal end                          (end=finish)
//   $stop                     -> the evaluator compiles every bare $stop as $finish
//                                (the end of the run, like `vvp -n`); one it left, on an
//                                assertion's line or from a macro, is an error report
//   $error / failed assertion -> counted, simulation continues       (never aborts)
//   $fatal                    -> coverage written, exit 1            (end=fatal)
//   runtime error             -> as $fatal, with line=-1 (-2: the model did not converge)
//   simulated-time limit      -> coverage written                    (end=sim_time_limit)
//   SIGTERM (wall-clock kill) -> coverage written if the loop regains control
// The end record goes to an inherited pipe whose file descriptor number the evaluator
// passes in the environment; the testbench cannot name it (no /proc in the sandbox, and
// Verilator's $fopen handles are its own), and the parent accepts exactly one record.
// The descriptor is marked close-on-exec and the variables are removed at start-up.
//   LLM4COV_END_FD         fd of the record pipe; one line, fields in this order:
//                          llm4cov-end/1 end=<reason> time=<ticks> precision=<exp>
//                          errors=<n> line=<l> coverage=<bytes of coverage.dat>
//                          file=<hex of the source file name>
//   LLM4COV_COVERAGE_FILE  coverage.dat path (a random name in the work dir)
//   LLM4COV_SIM_TIME_LIMIT simulated-time limit in seconds (float, 0 = none)
//   LLM4COV_MAX_TIME_SLOTS limit on time advances (0 = none): bounds a free-running clock
//                          whatever the timescale (1 ps units make seconds meaningless)
#include "verilated.h"
#include "verilated_cov.h"
#include "Vllm4cov_top.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <cstring>
#include <string>

namespace {
volatile std::sig_atomic_t g_terminate = 0;
VerilatedContext* g_ctx = nullptr;
int g_tb_errors = 0;
bool g_written = false;
int g_end_fd = -1;
std::string g_coverage_file = "coverage.dat";

void onTerminate(int) { g_terminate = 1; }

std::string envOr(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v ? std::string{v} : std::string{fallback};
}

// Takes the outputs' names from the environment and hides them from the simulation.
void takeOutputs() {
    g_coverage_file = envOr("LLM4COV_COVERAGE_FILE", "coverage.dat");
    const std::string fd = envOr("LLM4COV_END_FD", "");
    if (!fd.empty()) {
        g_end_fd = std::atoi(fd.c_str());
        if (fcntl(g_end_fd, F_SETFD, FD_CLOEXEC) != 0) g_end_fd = -1;
    }
    unsetenv("LLM4COV_END_FD");
    unsetenv("LLM4COV_COVERAGE_FILE");
}

std::string hex(const char* text) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (const char* p = text ? text : ""; *p && out.size() < 1024; ++p) {
        const unsigned char c = static_cast<unsigned char>(*p);
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

void writeResults(const char* reason, const char* file, int line) {
    if (g_written || !g_ctx) return;
    g_written = true;
#ifdef LLM4COV_PER_INSTANCE  // Verilator >= 5.050 --coverage-per-instance
    g_ctx->coveragep()->forcePerInstance(true);
#endif
    g_ctx->coveragep()->write(g_coverage_file);
    struct stat st {};
    const long long cov_bytes =
        stat(g_coverage_file.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
    std::fflush(stdout);
    if (g_end_fd < 0) return;
    char record[2048];
    const int n = std::snprintf(
        record, sizeof record,
        "llm4cov-end/1 end=%s time=%llu precision=%d errors=%d line=%d coverage=%lld file=%s\n",
        reason, static_cast<unsigned long long>(g_ctx->time()), g_ctx->timeprecision(),
        g_tb_errors, line, cov_bytes, hex(file).c_str());
    if (n > 0 && n < static_cast<int>(sizeof record)) {
        const ssize_t written = write(g_end_fd, record, static_cast<size_t>(n));  // one write
        (void)written;
    }
    close(g_end_fd);
    g_end_fd = -1;
}
}  // namespace

// $stop, $error and failed assertions arrive with maybe=true, $fatal with maybe=false.
// The call names only a file and line, which a testbench's `line directive forges, so
// nothing here is decided from them: every maybe=true call is an error report.
void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe) {
    (void)hier;
    if (!maybe) {
        VL_PRINTF("%%Error: %s:%d: $fatal: simulation aborted (coverage so far is kept)\n",
                  filename, linenum);
        writeResults("fatal", filename, linenum);
        std::exit(1);
    }
    (void)filename;
    (void)linenum;
    ++g_tb_errors;  // $error / assertion failure: reported, never fatal
}

// The runtime's own fatal errors (never a testbench's $fatal, which arrives above): the
// record says so with line -1, or -2 when the model did not converge (the runtime's
// message; what the testbench prints is never read back).
void vl_fatal(const char* filename, int linenum, const char* hier, const char* msg) {
    (void)hier;
    VL_PRINTF("%%Error: %s:%d: %s\n", filename, linenum, msg);
    writeResults("fatal", "", std::strstr(msg, "did not converge") ? -2 : -1);
    std::exit(1);
}

int main(int argc, char** argv, char**) {
    Verilated::debug(0);
    std::signal(SIGTERM, onTerminate);
    takeOutputs();
    const std::unique_ptr<VerilatedContext> contextp{new VerilatedContext};
    g_ctx = contextp.get();
    contextp->threads(1);
    contextp->commandArgs(argc, argv);
#if VM_TRACE
    contextp->traceEverOn(true);  // llm4cov --trace: $dumpfile/$dumpvars may open a dump
#endif
    const std::unique_ptr<Vllm4cov_top> topp{new Vllm4cov_top{contextp.get(), ""}};

    const long double limit_s = std::strtold(envOr("LLM4COV_SIM_TIME_LIMIT", "0").c_str(), nullptr);
    const long double ticks = limit_s * std::pow(10.0L, -contextp->timeprecision());
    // a limit below one tick of a coarse precision (10 ms at 1 s) is 0 ticks: the first
    // time advance passes it (it had read as "no limit": a thirtieth red team's
    // `timescale 1s/1s ran 10,000 times past it and passed as success)
    const bool limited = limit_s > 0;
    const uint64_t limit = ticks < 1.8e19L ? static_cast<uint64_t>(ticks) : UINT64_MAX;

    const uint64_t max_slots = std::strtoull(envOr("LLM4COV_MAX_TIME_SLOTS", "0").c_str(), nullptr, 10);
    uint64_t slots = 0;

    const char* reason = "no_events";
    while (!contextp->gotFinish()) {
        topp->eval();
        if (contextp->gotFinish()) break;
        if (g_terminate) { reason = "wall_timeout"; break; }
        if (!topp->eventsPending()) { reason = "no_events"; break; }
        const uint64_t next = topp->nextTimeSlot();
        if ((limited && next > limit) || (max_slots && ++slots > max_slots)) {
            reason = "sim_time_limit";
            break;
        }
        contextp->time(next);
    }
    if (contextp->gotFinish()) reason = "finish";
    if (!g_written) topp->final();
    writeResults(reason, "", 0);
    return 0;
}
