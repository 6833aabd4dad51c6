#include "harness/compile/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ak {
namespace {

// The file-system rights each Landlock ABI version knows; a ruleset must name only those.
__u64 handled_rights(int abi) {
  __u64 r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
            LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
            LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
            LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
            LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) r |= 1ULL << 13;  // LANDLOCK_ACCESS_FS_REFER
  if (abi >= 3) r |= 1ULL << 14;  // LANDLOCK_ACCESS_FS_TRUNCATE
  return r;
}

std::string why(const char* what) { return std::string("Landlock: ") + what + ": " + std::strerror(errno); }

}  // namespace

Status restrict_filesystem_to(const std::string& root) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return error(why("not offered by this kernel"));
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled_rights(int(abi));
  const int ruleset = int(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return error(why("creating a ruleset"));
  Status result = ok();
  landlock_path_beneath_attr beneath{};
  beneath.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  beneath.parent_fd = ::open(root.c_str(), O_PATH | O_CLOEXEC);
  if (beneath.parent_fd < 0) result = error(why(("opening " + root).c_str()));
  else if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0) != 0)
    result = error(why("allowing reads under the CUDA headers"));
  else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    result = error(why("setting no_new_privs"));
  else if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    result = error(why("restricting the process"));
  if (beneath.parent_fd >= 0) ::close(beneath.parent_fd);
  ::close(ruleset);
  return result;
}

}  // namespace ak
