/* The compiled task wrapper: what `wrapper.py`'s `run_task` does for a task the launcher
 * forks, as a small C program the launcher spawns instead (`shoal.executors.native` builds
 * it with the machine's C compiler, once per server process).
 *
 * Why. Forking the launcher's initialised interpreter costs ~8 ms of CPU per task on a
 * loaded 2-core machine (copy-on-write faults of the interpreter's heap, the Python that
 * runs in the child, a second fork for the isolated command); spawning this costs ~3.
 *
 * The contract is the Python wrapper's, field for field, so that the executor, adoption
 * after a restart and the Ray log reader cannot tell which one ran:
 *   - stdin from /dev/null, stdout and stderr appended to the task's logs (opened here,
 *     as the executor's user); the launcher made this process a session leader;
 *   - `pid.json` {"pid", "start_time"} created exclusively (a complete temp file linked
 *     into place): of two wrappers of one attempt only the first runs the command, and
 *     start_time is psutil's create_time of this process (boot time + start ticks);
 *   - `log-start.json`, the logs' sizes, unless a first claimant wrote it (not fsync'd:
 *     nothing relies on it surviving a machine's crash, the log reader then shows the
 *     attempt's log from its start);
 *   - SIGTERM, SIGINT and SIGHUP survived (the command gets the group's signal);
 *   - the command joins the task's cgroups, drops every group, switches gid and uid and
 *     takes umask 077 between vfork and exec (only when isolated, as `_isolate`);
 *   - the outcome {"exit_code", "signal", ["error"], ["reason"], "finished_at"} written
 *     atomically (temp, fsync, rename) to `status.json` after what the command left in its
 *     cgroups was killed and the cgroups removed.
 * Exit status: the command's (128 + signal when it was killed); 127 / 126 when it could not
 * be started; 126 when this wrapper itself failed before it owned the attempt.
 *
 * Usage (the launcher's):
 *     wrapper TASK_DIR STDOUT STDERR CWD UID GID N CGROUP... M NAME=VALUE... -- CMD ARG...
 * with "" for a CWD, UID or GID that is not set, and the command's M environment entries.
 * The wrapper itself runs with an empty environment: a task's LD_PRELOAD or
 * LD_LIBRARY_PATH reaches its command only, never this process (which may run as root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The id system calls that take 32-bit ids (on 32-bit x86 and ARM the plain ones take 16). */
#ifdef SYS_setresuid32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#endif

#define EXIT_NOT_FOUND 127
#define EXIT_NOT_EXECUTABLE 126
#define CGROUP_DRAIN 5.0
#define OOM_KILLED "OOMKilled"

static const char *task_dir;

static double clock_of(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap(void) {
    struct timespec t = {0, 10 * 1000 * 1000};
    nanosleep(&t, NULL);
}

static void keep_running(int signum) { (void)signum; }

static char *joined(const char *dir, const char *name) {
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    return path;
}

/* ---- JSON out: a string builder over open_memstream ------------------------------------- */

static void json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            fprintf(out, "\\%c", *c);
        } else if (*c < 0x20) {
            fprintf(out, "\\u%04x", *c);
        } else {
            fputc(*c, out);
        }
    }
    fputc('"', out);
}

static int write_all(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        data += n;
        size -= (size_t)n;
    }
    return 0;
}

/* A temp file in `task_dir` holding `text`, fsync'd when `durable`; its path, or NULL. */
static char *temp_file(const char *name, const char *text, int durable) {
    char *tmp = NULL;
    if (asprintf(&tmp, "%s/.%s.%d.%lld.tmp", task_dir, name, (int)getpid(),
                 (long long)(clock_of(CLOCK_MONOTONIC) * 1e9)) < 0) {
        return NULL;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        free(tmp);
        return NULL;
    }
    int failed = write_all(fd, text, strlen(text)) != 0 || (durable && fsync(fd) != 0);
    if (close(fd) != 0 || failed) {
        unlink(tmp);
        free(tmp);
        return NULL;
    }
    return tmp;
}

/* wrapper.py's write_json_atomic: temp + fsync (when `durable`) + rename. */
static int write_atomic(const char *name, const char *text, int durable) {
    char *tmp = temp_file(name, text, durable);
    if (tmp == NULL) {
        return -1;
    }
    char *path = joined(task_dir, name);
    int result = rename(tmp, path);
    if (result != 0) {
        unlink(tmp);
    }
    free(tmp);
    free(path);
    return result;
}

/* wrapper.py's create_json_exclusive: 1 created, 0 there already, -1 failed. */
static int create_exclusive(const char *name, const char *text) {
    char *tmp = temp_file(name, text, 0);
    if (tmp == NULL) {
        return -1;
    }
    char *path = joined(task_dir, name);
    int result = link(tmp, path) == 0 ? 1 : (errno == EEXIST ? 0 : -1);
    unlink(tmp);
    free(tmp);
    free(path);
    return result;
}

static char *read_text(const char *path) {
    FILE *in = fopen(path, "re");
    if (in == NULL) {
        return NULL;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        fwrite(chunk, 1, n, out);
    }
    fclose(in);
    fclose(out);
    return text;
}

/* ---- the pid record ------------------------------------------------------------------------ */

/* psutil's create_time of this process: start ticks / CLK_TCK + the boot time. */
static double start_time(void) {
    char *stat = read_text("/proc/self/stat");
    char *proc_stat = read_text("/proc/stat");
    if (stat == NULL || proc_stat == NULL) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    char *field = strrchr(stat, ')');
    unsigned long long ticks = 0;
    /* After the command's name: state is field 3, starttime field 22. */
    for (int i = 3; field != NULL && i <= 22; i++) {
        field = strchr(field + 1, ' ');
        if (field != NULL && i == 22) {
            ticks = strtoull(field + 1, NULL, 10);
        }
    }
    char *btime = strstr(proc_stat, "\nbtime ");
    if (field == NULL || btime == NULL) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    double boot = (double)strtoull(btime + 7, NULL, 10);
    double created = (double)ticks / (double)sysconf(_SC_CLK_TCK) + boot;
    free(stat);
    free(proc_stat);
    return created;
}

/* wrapper.py's _own_attempt: this process created the record, or the record names it. */
static int own_attempt(void) {
    char *record = NULL;
    if (asprintf(&record, "{\"pid\": %d, \"start_time\": %.17g}", (int)getpid(),
                 start_time()) < 0) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    int created = create_exclusive("pid.json", record);
    free(record);
    if (created < 0) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    if (created) {
        return 1;
    }
    char *path = joined(task_dir, "pid.json");
    char *text = read_text(path);
    free(path);
    char *pid = text == NULL ? NULL : strstr(text, "\"pid\"");
    int owner = 0;
    if (pid != NULL) {
        pid = strchr(pid + 5, ':');
        owner = pid != NULL && strtol(pid + 1, NULL, 10) == (long)getpid();
    }
    free(text);
    return owner;
}

static long long size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* ---- cgroups (wrapper.py's primitives) --------------------------------------------------- */

static int signal_cgroups(char **cgroups, int count, int signum) {
    int signalled = 0;
    for (int i = 0; i < count; i++) {
        char *path = joined(cgroups[i], "cgroup.procs");
        char *text = read_text(path);
        free(path);
        if (text == NULL) {
            continue;
        }
        for (char *line = text; *line;) {
            char *end;
            long pid = strtol(line, &end, 10);
            if (end == line) {
                break;
            }
            if (kill((pid_t)pid, signum) == 0) {
                signalled++;
            }
            line = end;
        }
        free(text);
    }
    return signalled;
}

static int oom_killed(const char *cgroup, int sigkilled) {
    const char *names[] = {"memory.events", "memory.oom_control"};
    for (int n = 0; n < 2; n++) {
        char *path = joined(cgroup, names[n]);
        char *text = read_text(path);
        free(path);
        if (text == NULL) {
            continue;
        }
        for (char *line = text; line != NULL && *line; line = strchr(line, '\n')) {
            line += *line == '\n';
            if (strncmp(line, "oom_kill ", 9) == 0) {
                int killed = strtol(line + 9, NULL, 10) > 0;
                free(text);
                return killed;
            }
        }
        free(text);
    }
    if (!sigkilled) {
        return 0;
    }
    char *path = joined(cgroup, "memory.failcnt");
    char *text = read_text(path);
    free(path);
    int hit = text != NULL && strtol(text, NULL, 10) > 0;
    free(text);
    return hit;
}

static void drain_cgroups(char **cgroups, int count, double deadline) {
    while (signal_cgroups(cgroups, count, SIGKILL) && clock_of(CLOCK_MONOTONIC) < deadline) {
        nap();
    }
    for (int i = 0; i < count; i++) {
        /* A killed process leaves its cgroup a moment after it dies. */
        while (rmdir(cgroups[i]) != 0 && errno != ENOENT
               && clock_of(CLOCK_MONOTONIC) < deadline) {
            nap();
        }
    }
}

/* ---- the command ---------------------------------------------------------------------------- */

struct isolation {
    const char *uid, *gid;
    char **cgroups;
    int count;
};

/* What the child does between vfork and exec, prepared before the vfork: the child shares
 * this process's memory until it execs, so it allocates nothing and calls only system
 * calls (raw ones for the ids: the C library's would act for every thread). */
struct plan {
    char **procs;       /* each cgroup's cgroup.procs */
    int count;
    int set_gid, set_uid;
    gid_t gid;
    uid_t uid;
    int isolated;
    char **candidates;  /* the command's paths to try, in order */
    int tries;
};

/* The command's paths to try, as subprocess does (not as execvp, which runs a file it
 * cannot exec with /bin/sh): a name with a slash as it is, else in each directory of the
 * command's PATH (or /bin:/usr/bin). */
__attribute__((noinline))
static char **candidates_of(const char *name, char **env, int *tries) {
    if (strchr(name, '/') != NULL) {
        char **one = calloc(1, sizeof *one);
        if (one == NULL) {
            _exit(EXIT_NOT_EXECUTABLE);
        }
        one[0] = (char *)name;
        *tries = 1;
        return one;
    }
    const char *path = "/bin:/usr/bin";
    for (char **entry = env; *entry; entry++) {
        if (strncmp(*entry, "PATH=", 5) == 0) {
            path = *entry + 5;
        }
    }
    int dirs = 1;
    for (const char *c = path; *c; c++) {
        dirs += *c == ':';
    }
    char **all = calloc((size_t)dirs, sizeof *all);
    if (all == NULL) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    int n = 0;
    for (const char *dir = path; n < dirs; dir++) {
        const char *end = strchrnul(dir, ':');
        if (asprintf(&all[n++], "%.*s%s%s", (int)(end - dir), dir, end > dir ? "/" : "",
                     name) < 0) {
            _exit(EXIT_NOT_EXECUTABLE);
        }
        if (*end == '\0') {
            break;
        }
        dir = end;
    }
    *tries = n;
    return all;
}

__attribute__((noinline))
static struct plan plan_of(char **command, char **env, const struct isolation *iso) {
    struct plan plan = {0};
    plan.procs = calloc((size_t)iso->count + 1, sizeof *plan.procs);
    if (plan.procs == NULL) {
        _exit(EXIT_NOT_EXECUTABLE);
    }
    for (int i = 0; i < iso->count; i++) {
        plan.procs[i] = joined(iso->cgroups[i], "cgroup.procs");
    }
    plan.count = iso->count;
    plan.set_gid = *iso->gid != '\0';
    plan.gid = (gid_t)strtoul(iso->gid, NULL, 10);
    plan.set_uid = *iso->uid != '\0';
    plan.uid = (uid_t)strtoul(iso->uid, NULL, 10);
    plan.isolated = plan.set_uid || plan.set_gid || iso->count > 0;
    plan.candidates = candidates_of(command[0], env, &plan.tries);
    return plan;
}

/* In the child (wrapper.py's _isolate): join the cgroups, drop every group, switch gid and
 * uid, umask 077; 0, or the errno. */
static int isolate(const struct plan *plan) {
    for (int i = 0; i < plan->count; i++) {
        int fd = open(plan->procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write_all(fd, "0", 1) != 0) {  /* 0: the writing process */
            return errno;
        }
        close(fd);
    }
    if (plan->set_gid && (syscall(SYS_SETGROUPS, 0, NULL) != 0
                          || syscall(SYS_SETRESGID, plan->gid, plan->gid, plan->gid) != 0)) {
        return errno;
    }
    if (plan->set_uid && syscall(SYS_SETRESUID, plan->uid, plan->uid, plan->uid) != 0) {
        return errno;
    }
    umask(077);
    return 0;
}

/* In the child: exec the first candidate that runs; the first error other than "not
 * there" is the one reported. */
static int exec_command(const struct plan *plan, char **command, char **env) {
    int first = 0, last = ENOENT;
    for (int i = 0; i < plan->tries; i++) {
        execve(plan->candidates[i], command, env);
        last = errno;
        if (first == 0 && last != ENOENT && last != ENOTDIR) {
            first = last;
        }
    }
    return first ? first : last;
}

enum stage { EXEC = 1, ISOLATE = 2 };

struct failure {
    int stage, error;
};

/* vfork and exec the command; its pid, or -1 with `failed` saying why it did not start.
 * vfork, not fork: nothing of this process is copied, and it waits only for the exec. */
static pid_t start(char **command, char **env, const struct isolation *iso,
                   struct failure *failed) {
    struct plan plan = plan_of(command, env, iso);
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        failed->stage = EXEC;
        failed->error = errno;
        return -1;
    }
    pid_t pid = vfork();
    if (pid == 0) {
        struct failure mine = {ISOLATE, plan.isolated ? isolate(&plan) : 0};
        if (mine.error == 0) {
            mine.stage = EXEC;
            mine.error = exec_command(&plan, command, env);
        }
        write_all(pipe_fds[1], (const char *)&mine, sizeof mine);
        _exit(255);
    }
    int error = errno;
    close(pipe_fds[1]);
    if (pid < 0) {
        failed->stage = EXEC;
        failed->error = error;
        close(pipe_fds[0]);
        return -1;
    }
    ssize_t n;
    do {
        n = read(pipe_fds[0], failed, sizeof *failed);
    } while (n < 0 && errno == EINTR);
    close(pipe_fds[0]);
    if (n == (ssize_t)sizeof *failed) {  /* it never became the command: reap it */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return -1;
    }
    return pid;
}

/* Python's str() of the OSError a failed start raises. */
static void os_error(FILE *out, int error, const char *filename) {
    fprintf(out, "[Errno %d] %s", error, strerror(error));
    if (filename != NULL) {
        fprintf(out, ": '%s'", filename);
    }
}

static char *message(int error, const char *filename, const char *prefix) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    fputs(prefix, out);
    os_error(out, error, filename);
    fclose(out);
    return text;
}

/* Close the outcome with its time and write it durably; 0, or -1. */
static int finish(FILE *outcome, char **text) {
    fprintf(outcome, ", \"finished_at\": %.17g}", clock_of(CLOCK_REALTIME));
    fclose(outcome);  /* `*text` is complete only now */
    int written = write_atomic("status.json", *text, 1);
    free(*text);
    return written;
}

static void to_fd(int fd, const char *path, int flags) {
    int opened = open(path, flags | O_CLOEXEC, 0600);
    if (opened < 0) {
        fprintf(stderr, "shoal wrapper: cannot open %s: %s\n", path, strerror(errno));
        _exit(EXIT_NOT_EXECUTABLE);
    }
    if (dup2(opened, fd) < 0) {  /* dup2 clears close-on-exec on `fd` */
        _exit(EXIT_NOT_EXECUTABLE);
    }
    close(opened);
}

int main(int argc, char **argv) {
    int cgroups = argc > 8 ? atoi(argv[7]) : -1;
    int envs = cgroups >= 0 && 8 + cgroups < argc ? atoi(argv[8 + cgroups]) : -1;
    int separator = 9 + cgroups + envs;
    if (cgroups < 0 || envs < 0 || separator + 1 >= argc || strcmp(argv[separator], "--") != 0) {
        fprintf(stderr, "usage: wrapper TASK_DIR STDOUT STDERR CWD UID GID N CGROUP... "
                        "M NAME=VALUE... -- CMD [ARG...]\n");
        return 2;
    }
    task_dir = argv[1];
    const char *out_log = argv[2], *err_log = argv[3], *cwd = argv[4];
    struct isolation iso = {argv[5], argv[6], argv + 8, cgroups};
    char **env = calloc((size_t)envs + 1, sizeof *env);
    if (env == NULL) {
        return EXIT_NOT_EXECUTABLE;
    }
    memcpy(env, argv + 9 + cgroups, (size_t)envs * sizeof *env);
    char **command = argv + separator + 1;
    to_fd(0, "/dev/null", O_RDONLY);
    to_fd(1, out_log, O_WRONLY | O_APPEND | O_CREAT);
    to_fd(2, err_log, O_WRONLY | O_APPEND | O_CREAT);
    /* The launcher is Python, which ignores these: the command gets them as defaults, as
     * subprocess's restore_signals gives them. */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    struct sigaction keep = {0};
    keep.sa_handler = keep_running;  /* a handler, unlike SIG_IGN, is reset by exec */
    keep.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &keep, NULL);
    sigaction(SIGINT, &keep, NULL);
    sigaction(SIGHUP, &keep, NULL);
    if (!own_attempt()) {
        return 0;
    }
    char *log_start = joined(task_dir, "log-start.json");
    if (access(log_start, F_OK) != 0) {
        char *sizes = NULL;
        if (asprintf(&sizes, "{\"stdout\": %lld, \"stderr\": %lld}", size_of(out_log),
                     size_of(err_log)) < 0 || write_atomic("log-start.json", sizes, 0) != 0) {
            _exit(EXIT_NOT_EXECUTABLE);
        }
        free(sizes);
    }
    free(log_start);
    char *text = NULL;
    size_t size = 0;
    FILE *outcome = open_memstream(&text, &size);
    if (*cwd && chdir(cwd) != 0) {  /* as the executor's Popen would have: nothing runs */
        char *why = message(errno, cwd, "cannot start: ");
        fprintf(outcome, "{\"exit_code\": %d, \"signal\": null, \"error\": ", EXIT_NOT_FOUND);
        json_string(outcome, why);
        free(why);
        return finish(outcome, &text) == 0 ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE;
    }
    struct failure failed = {0, 0};
    pid_t child = start(command, env, &iso, &failed);
    int code;
    if (child < 0) {
        code = failed.stage == EXEC && failed.error == ENOENT ? EXIT_NOT_FOUND
                                                              : EXIT_NOT_EXECUTABLE;
        char *why = failed.stage == EXEC
            ? message(failed.error, command[0], "")
            : message(failed.error, NULL, "cannot isolate the command: ");
        fprintf(stderr, "shoal: cannot start '%s': %s\n", command[0], why);
        fprintf(outcome, "{\"exit_code\": %d, \"signal\": null, \"error\": ", code);
        json_string(outcome, why);
        free(why);
    } else {
        int status;
        while (waitpid(child, &status, 0) < 0) {
            if (errno != EINTR) {
                status = 0;
                break;
            }
        }
        int failed_run;
        if (WIFSIGNALED(status)) {
            code = 128 + WTERMSIG(status);
            fprintf(outcome, "{\"exit_code\": null, \"signal\": %d", WTERMSIG(status));
            failed_run = 1;
        } else {
            code = WEXITSTATUS(status);
            fprintf(outcome, "{\"exit_code\": %d, \"signal\": null", code);
            failed_run = code != 0;
        }
        /* A shell reports its OOM-killed child as 137: any failure counts. */
        int sigkilled = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        for (int i = 0; failed_run && i < iso.count; i++) {
            if (oom_killed(iso.cgroups[i], sigkilled)) {
                fprintf(outcome, ", \"reason\": \"%s\", \"error\": \"killed by the OOM "
                                 "killer: memory above the task's request\"", OOM_KILLED);
                break;
            }
        }
    }
    /* The command is over: what it left behind (double forks, setsid daemons) goes too. */
    drain_cgroups(iso.cgroups, iso.count, clock_of(CLOCK_MONOTONIC) + CGROUP_DRAIN);
    return finish(outcome, &text) == 0 ? code : EXIT_NOT_EXECUTABLE;
}
