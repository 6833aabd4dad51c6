#include "daemon/run_folder/git_history.hpp"

#include <git2.h>

#include <algorithm>
#include <sstream>

namespace ak {
namespace {

std::string git_failure(const std::string& what) {
  const ::git_error* e = git_error_last();
  return what + ": " + (e && e->message ? e->message : "unknown libgit2 error");
}

/// Frees a libgit2 object at the end of a scope.
template <typename T, void (*Free)(T*)>
struct Owned {
  T* p = nullptr;
  ~Owned() {
    if (p) Free(p);
  }
};

CommitInfo info_of(git_commit* c) {
  CommitInfo i;
  char hex[GIT_OID_HEXSZ + 1] = {};
  git_oid_tostr(hex, 8, git_commit_id(c));
  i.id = hex;
  i.message = git_commit_message(c) ? git_commit_message(c) : "";
  i.trailers = parse_trailers(i.message);
  return i;
}

}  // namespace

std::map<std::string, std::string> parse_trailers(const std::string& message) {
  std::map<std::string, std::string> t;
  // Only the last paragraph holds trailers: a line of the subject or body never reads as one.
  const size_t end = message.find_last_not_of('\n');
  const size_t blank = end == std::string::npos ? std::string::npos : message.rfind("\n\n", end);
  std::istringstream in(blank == std::string::npos ? std::string() : message.substr(blank + 2));
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(": ");
    if (colon == std::string::npos || colon == 0) continue;
    std::string key = line.substr(0, colon);
    if (key.find(' ') != std::string::npos) continue;
    t[key] = line.substr(colon + 2);
  }
  return t;
}

Result<std::unique_ptr<GitHistory>> GitHistory::open(const std::string& dir, const std::string& branch) {
  git_libgit2_init();
  std::unique_ptr<GitHistory> g(new GitHistory());
  if (git_repository_open(&g->repo_, dir.c_str()) != 0) {
    git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
    opts.flags = GIT_REPOSITORY_INIT_MKPATH;
    const std::string head = "refs/heads/" + branch;
    opts.initial_head = head.c_str();
    if (git_repository_init_ext(&g->repo_, dir.c_str(), &opts) != 0)
      return error(git_failure("cannot create a git repository in " + dir));
  }
  git_reference* head = nullptr;
  if (git_reference_lookup(&head, g->repo_, "HEAD") == 0) {
    std::string target = git_reference_symbolic_target(head) ? git_reference_symbolic_target(head) : "";
    git_reference_free(head);
    if (target != "refs/heads/" + branch)
      return error("the repository in " + dir + " is on " + target + ", not refs/heads/" + branch +
                   ": another run's folder? (check it out, or give this run another [run] name)");
  }
  return g;
}

GitHistory::~GitHistory() {
  if (repo_) git_repository_free(repo_);
}

Result<std::string> GitHistory::commit_file(const std::string& relpath, const std::string& message) {
  Owned<git_index, git_index_free> index;
  if (git_repository_index(&index.p, repo_) != 0) return error(git_failure("opening the git index"));
  if (git_index_add_bypath(index.p, relpath.c_str()) != 0 || git_index_write(index.p) != 0)
    return error(git_failure("adding " + relpath + " to git"));
  git_oid tree_id, commit_id, parent_id;
  if (git_index_write_tree(&tree_id, index.p) != 0) return error(git_failure("writing the git tree"));
  Owned<git_tree, git_tree_free> tree;
  git_tree_lookup(&tree.p, repo_, &tree_id);
  Owned<git_signature, git_signature_free> sig;
  if (git_signature_now(&sig.p, "autokernel", "autokernel@localhost") != 0) return error(git_failure("making a signature"));
  Owned<git_commit, git_commit_free> parent;
  const bool has_parent = git_reference_name_to_id(&parent_id, repo_, "HEAD") == 0;
  if (has_parent && git_commit_lookup(&parent.p, repo_, &parent_id) != 0) return error(git_failure("reading HEAD"));
  const git_commit* parents[] = {parent.p};
  // libgit2 reads the message as a C string: a NUL would cut it before its trailers.
  std::string text = message;
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  if (git_commit_create(&commit_id, repo_, "HEAD", sig.p, sig.p, nullptr, text.c_str(), tree.p,
                        has_parent ? 1 : 0, parents) != 0)
    return error(git_failure("committing " + relpath));
  char hex[GIT_OID_HEXSZ + 1] = {};
  git_oid_tostr(hex, 8, &commit_id);
  return std::string(hex);
}

Result<std::optional<CommitInfo>> GitHistory::head() {
  auto all = log(1);
  if (!all) return all.error();
  if (all->empty()) return std::optional<CommitInfo>();
  return std::optional<CommitInfo>(all->front());
}

Result<std::vector<CommitInfo>> GitHistory::log(size_t limit) {
  std::vector<CommitInfo> out;
  git_oid id;
  if (git_reference_name_to_id(&id, repo_, "HEAD") != 0) return out;  // no commit yet
  Owned<git_revwalk, git_revwalk_free> walk;
  if (git_revwalk_new(&walk.p, repo_) != 0 || git_revwalk_push(walk.p, &id) != 0)
    return error(git_failure("walking the git history"));
  while (out.size() < limit && git_revwalk_next(&id, walk.p) == 0) {
    Owned<git_commit, git_commit_free> c;
    if (git_commit_lookup(&c.p, repo_, &id) != 0) return error(git_failure("reading a commit"));
    out.push_back(info_of(c.p));
  }
  return out;
}

Result<std::optional<std::string>> GitHistory::file_at_head(const std::string& relpath) {
  git_oid id;
  if (git_reference_name_to_id(&id, repo_, "HEAD") != 0) return std::optional<std::string>();
  Owned<git_commit, git_commit_free> c;
  Owned<git_tree, git_tree_free> tree;
  Owned<git_tree_entry, git_tree_entry_free> entry;
  Owned<git_blob, git_blob_free> blob;
  if (git_commit_lookup(&c.p, repo_, &id) != 0 || git_commit_tree(&tree.p, c.p) != 0)
    return error(git_failure("reading HEAD's tree"));
  if (git_tree_entry_bypath(&entry.p, tree.p, relpath.c_str()) != 0) return std::optional<std::string>();
  if (git_blob_lookup(&blob.p, repo_, git_tree_entry_id(entry.p)) != 0) return error(git_failure("reading " + relpath));
  return std::optional<std::string>(
      std::string(static_cast<const char*>(git_blob_rawcontent(blob.p)), size_t(git_blob_rawsize(blob.p))));
}

Status GitHistory::push(const std::string& remote_url) {
  git_reference* head = nullptr;
  if (git_reference_lookup(&head, repo_, "HEAD") != 0) return error(git_failure("reading HEAD"));
  const std::string branch = git_reference_symbolic_target(head) ? git_reference_symbolic_target(head) : "";
  git_reference_free(head);
  git_oid id;
  if (git_reference_name_to_id(&id, repo_, "HEAD") != 0) return ok();  // nothing committed yet
  Owned<git_remote, git_remote_free> remote;
  if (git_remote_create_anonymous(&remote.p, repo_, remote_url.c_str()) != 0)
    return error(git_failure("[run] git_remote = \"" + remote_url + "\" is not a remote git can use"));
  std::string spec = branch + ":" + branch;
  char* specs[] = {spec.data()};
  git_strarray refspecs{specs, 1};
  git_push_options opts = GIT_PUSH_OPTIONS_INIT;
  if (git_remote_push(remote.p, &refspecs, &opts) != 0)
    return error(git_failure("pushing " + branch + " to " + remote_url +
                             " (is it reachable, and is the branch there only this run's?)"));
  return ok();
}

}  // namespace ak
