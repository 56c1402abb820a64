#include "util/file_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace kforge {

namespace {

// One folder on the way down: its name in its parent and its identity, checked when the walk climbs
// back through ".." (nothing may have moved it meanwhile).
struct Level {
  std::string name;
  dev_t dev = 0;
  ino_t ino = 0;
};

int open_dir_at(int parent, const char* name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    // A folder its writer made unreadable (mode 000): ours to open again when we own it or are root.
    fchmodat(parent, name, 0700, 0);
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  return fd;
}

bool is_dir_entry(int dir, const dirent* e) {
  if (e->d_type == DT_DIR) return true;
  if (e->d_type != DT_UNKNOWN) return false;
  struct stat st {};
  return fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

// Climbs from `fd` (closed) to its parent, which must be `expected`; -1 where it is not.
int climb(int fd, const Level& expected) {
  int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(fd);
  struct stat st {};
  if (parent < 0 || fstat(parent, &st) != 0 || st.st_dev != expected.dev || st.st_ino != expected.ino) {
    if (parent >= 0) close(parent);
    return -1;
  }
  return parent;
}

// Calls `visit(dir, entry)` for each entry of the open folder `dir`; stops when it returns false.
template <class Visit>
bool each_entry(int dir, Visit visit) {
  int copy = dup(dir);
  if (copy < 0) return false;
  DIR* d = fdopendir(copy);
  if (!d) {
    close(copy);
    return false;
  }
  rewinddir(d);
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    if (!visit(dir, e)) break;
  }
  closedir(d);
  return true;
}

Level identity(int fd, std::string name) {
  struct stat st {};
  fstat(fd, &st);
  return {std::move(name), st.st_dev, st.st_ino};
}

}  // namespace

TreeSize measure_tree(const std::filesystem::path& root, std::optional<std::uint64_t> max_entries) {
  TreeSize size;
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    size.complete = false;
    return size;
  }
  // Depth-first: each level keeps the names of the subfolders it has still to visit.
  std::vector<Level> path;                       // the folders above the current one
  std::vector<std::vector<std::string>> pending;  // per level (current included): subfolders left
  auto read_level = [&](int dir) {
    std::vector<std::string> subdirs;
    bool ok = each_entry(dir, [&](int at, const dirent* e) {
      ++size.entries;
      if (is_dir_entry(at, e)) {
        subdirs.emplace_back(e->d_name);
      } else if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN) {
        struct stat st {};
        if (fstatat(at, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
          size.bytes += static_cast<std::uint64_t>(st.st_size);
      }
      return !(max_entries && size.entries > *max_entries);
    });
    if (!ok) size.complete = false;
    pending.push_back(std::move(subdirs));
  };
  read_level(fd);
  while (fd >= 0) {
    if (max_entries && size.entries > *max_entries) {
      size.complete = false;
      break;
    }
    if (!pending.back().empty()) {
      std::string name = std::move(pending.back().back());
      pending.back().pop_back();
      int child = open_dir_at(fd, name.c_str());
      if (child < 0) {
        size.complete = false;
        continue;
      }
      path.push_back(identity(fd, name));
      close(fd);
      fd = child;
      read_level(fd);
      continue;
    }
    pending.pop_back();
    if (path.empty()) break;
    fd = climb(fd, path.back());
    path.pop_back();
    if (fd < 0) size.complete = false;
  }
  if (fd >= 0) close(fd);
  return size;
}

bool remove_tree(const std::filesystem::path& root) {
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return unlink(root.c_str()) == 0;
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    chmod(root.c_str(), 0700);
    fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return false;
  std::vector<Level> path;  // the folders above the current one, each with the current one's name in it
  std::string current;      // the name of the current folder in its parent
  bool stuck = false;
  while (fd >= 0) {
    // Everything but folders goes now; the first folder found is entered.
    std::string subdir;
    each_entry(fd, [&](int at, const dirent* e) {
      if (is_dir_entry(at, e)) {
        subdir = e->d_name;
        return false;
      }
      unlinkat(at, e->d_name, 0);  // one that cannot go keeps its folder: the rmdir below fails
      return true;
    });
    if (!subdir.empty()) {
      int child = open_dir_at(fd, subdir.c_str());
      if (child >= 0) {
        Level here = identity(fd, current);
        path.push_back(here);
        close(fd);
        fd = child;
        current = subdir;
        continue;
      }
      // A folder that cannot be entered stays, with what is above it (its parent's rmdir fails).
    }
    if (path.empty()) {
      close(fd);
      fd = -1;
      break;
    }
    int parent = climb(fd, path.back());
    if (parent < 0) {
      stuck = true;
      break;
    }
    if (unlinkat(parent, current.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      // Not empty after all (an entry that could not go): leave it and what is above it.
      close(parent);
      stuck = true;
      break;
    }
    current = path.back().name;
    path.pop_back();
    fd = parent;
  }
  if (stuck) return false;
  return rmdir(root.c_str()) == 0 || errno == ENOENT;
}

}  // namespace kforge
