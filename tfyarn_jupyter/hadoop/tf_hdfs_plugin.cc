/*
 * TensorFlow's modular filesystem plugin for hdfs:// and viewfs://, bridged to Python.
 *
 * TensorFlow loads this library with tf.experimental.register_filesystem_plugin() and
 * calls TF_InitPlugin; every operation is forwarded to a table of callbacks that
 * tfyarn_jupyter/hadoop/tf_filesystem.py installs first (tfyarn_set_callbacks), and that
 * speaks HDFS's RPC through hdfs-native. So no libhdfs and no JVM: the library holds
 * no HDFS code, only the C ABI TensorFlow expects. Built by tf_filesystem.py against the
 * headers of the TensorFlow it runs with (they ship in the wheel), linked to its
 * libtensorflow_framework for TF_SetStatus. C++ only because TensorFlow's header declares
 * its version constants constexpr; the code is plain C behind extern "C".
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tensorflow/c/experimental/filesystem/filesystem_interface.h"
#include "tensorflow/c/tf_status.h"

/* The callbacks: each gets TensorFlow's status (set through tfyarn_set_status on error). */
typedef struct {
  int64_t (*open_read)(void* status, const char* uri);
  int64_t (*read)(void* status, int64_t handle, uint64_t offset, size_t n, char* buffer);
  int64_t (*open_write)(void* status, const char* uri, int append);
  void (*write)(void* status, int64_t handle, const char* buffer, size_t n);
  int64_t (*tell)(void* status, int64_t handle);
  void (*flush)(void* status, int64_t handle, int sync);
  void (*close)(void* status, int64_t handle);
  void (*release)(int64_t handle);
  void (*exists)(void* status, const char* uri);
  void (*stat)(void* status, const char* uri, int64_t* length, int64_t* mtime_nsec,
               int* is_directory);
  int (*list)(void* status, const char* uri, char** names);
  void (*mkdir)(void* status, const char* uri, int recursive);
  void (*remove)(void* status, const char* uri, int kind);
  void (*rename)(void* status, const char* src, const char* dst);
} tfyarn_callbacks;

static tfyarn_callbacks cb;
static bool cb_set = false;

extern "C" {

/* Called by Python (ctypes) before TensorFlow registers the plugin. */
void tfyarn_set_callbacks(const tfyarn_callbacks* callbacks) {
  cb = *callbacks;
  cb_set = true;
}

/* For the Python side: set TensorFlow's status; memory TensorFlow's side frees. */
void tfyarn_set_status(void* status, int code, const char* message) {
  TF_SetStatus((TF_Status*)status, (TF_Code)code, message);
}
void* tfyarn_malloc(size_t size) { return malloc(size); }

}  // extern "C"

namespace {

void* plugin_memory_allocate(size_t size) { return calloc(1, size); }
void plugin_memory_free(void* ptr) { free(ptr); }

bool ready(TF_Status* status) {
  if (cb_set) return true;
  TF_SetStatus(status, TF_FAILED_PRECONDITION,
               "tfyarn_jupyter's hdfs:// filesystem was loaded without its Python side: "
               "call tfyarn_jupyter.hadoop.tf_plugin.register()");
  return false;
}

/* -- random access files ---------------------------------------------------------- */
void raf_cleanup(TF_RandomAccessFile* file) {
  if (cb_set) cb.release((int64_t)(intptr_t)file->plugin_file);
}

int64_t raf_read(const TF_RandomAccessFile* file, uint64_t offset, size_t n,
                        char* buffer, TF_Status* status) {
  return cb.read(status, (int64_t)(intptr_t)file->plugin_file, offset, n, buffer);
}

/* -- writable files ----------------------------------------------------------------- */
void wf_cleanup(TF_WritableFile* file) {
  if (cb_set) cb.release((int64_t)(intptr_t)file->plugin_file);
}

void wf_append(const TF_WritableFile* file, const char* buffer, size_t n,
                      TF_Status* status) {
  cb.write(status, (int64_t)(intptr_t)file->plugin_file, buffer, n);
}

int64_t wf_tell(const TF_WritableFile* file, TF_Status* status) {
  return cb.tell(status, (int64_t)(intptr_t)file->plugin_file);
}

void wf_flush(const TF_WritableFile* file, TF_Status* status) {
  cb.flush(status, (int64_t)(intptr_t)file->plugin_file, 0);
}

void wf_sync(const TF_WritableFile* file, TF_Status* status) {
  cb.flush(status, (int64_t)(intptr_t)file->plugin_file, 1);
}

void wf_close(const TF_WritableFile* file, TF_Status* status) {
  cb.close(status, (int64_t)(intptr_t)file->plugin_file);
}

/* -- the filesystem ------------------------------------------------------------------ */
void fs_init(TF_Filesystem* filesystem, TF_Status* status) {
  filesystem->plugin_filesystem = NULL;
  TF_SetStatus(status, TF_OK, "");
}

void fs_cleanup(TF_Filesystem* filesystem) { (void)filesystem; }

void fs_new_random_access_file(const TF_Filesystem* filesystem, const char* path,
                                      TF_RandomAccessFile* file, TF_Status* status) {
  if (!ready(status)) return;
  file->plugin_file = (void*)(intptr_t)cb.open_read(status, path);
}

void fs_new_writable_file(const TF_Filesystem* filesystem, const char* path,
                                 TF_WritableFile* file, TF_Status* status) {
  if (!ready(status)) return;
  file->plugin_file = (void*)(intptr_t)cb.open_write(status, path, 0);
}

void fs_new_appendable_file(const TF_Filesystem* filesystem, const char* path,
                                   TF_WritableFile* file, TF_Status* status) {
  if (!ready(status)) return;
  file->plugin_file = (void*)(intptr_t)cb.open_write(status, path, 1);
}

void fs_create_dir(const TF_Filesystem* filesystem, const char* path,
                          TF_Status* status) {
  if (ready(status)) cb.mkdir(status, path, 0);
}

void fs_recursively_create_dir(const TF_Filesystem* filesystem, const char* path,
                                      TF_Status* status) {
  if (ready(status)) cb.mkdir(status, path, 1);
}

void fs_delete_file(const TF_Filesystem* filesystem, const char* path,
                           TF_Status* status) {
  if (ready(status)) cb.remove(status, path, 0);
}

void fs_delete_dir(const TF_Filesystem* filesystem, const char* path,
                          TF_Status* status) {
  if (ready(status)) cb.remove(status, path, 1);
}

void fs_delete_recursively(const TF_Filesystem* filesystem, const char* path,
                                  uint64_t* undeleted_files, uint64_t* undeleted_dirs,
                                  TF_Status* status) {
  *undeleted_files = 0;
  *undeleted_dirs = 0;
  if (!ready(status)) return;
  cb.remove(status, path, 2);
  if (TF_GetCode(status) != TF_OK) *undeleted_dirs = 1;
}

void fs_rename_file(const TF_Filesystem* filesystem, const char* src, const char* dst,
                           TF_Status* status) {
  if (ready(status)) cb.rename(status, src, dst);
}

void fs_path_exists(const TF_Filesystem* filesystem, const char* path,
                           TF_Status* status) {
  if (ready(status)) cb.exists(status, path);
}

void fs_stat(const TF_Filesystem* filesystem, const char* path,
                    TF_FileStatistics* stats, TF_Status* status) {
  int64_t length = 0, mtime = 0;
  int is_dir = 0;
  if (!ready(status)) return;
  cb.stat(status, path, &length, &mtime, &is_dir);
  stats->length = length;
  stats->mtime_nsec = mtime;
  stats->is_directory = is_dir != 0;
}

bool fs_is_directory(const TF_Filesystem* filesystem, const char* path,
                            TF_Status* status) {
  TF_FileStatistics stats;
  fs_stat(filesystem, path, &stats, status);
  if (TF_GetCode(status) != TF_OK) return false;
  if (!stats.is_directory) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, "not a directory");
    return false;
  }
  return true;
}

int64_t fs_get_file_size(const TF_Filesystem* filesystem, const char* path,
                                TF_Status* status) {
  TF_FileStatistics stats;
  fs_stat(filesystem, path, &stats, status);
  if (TF_GetCode(status) != TF_OK) return -1;
  if (stats.is_directory) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, "is a directory");
    return -1;
  }
  return stats.length;
}

/* The callback gives the names as one malloc'd block of NUL-terminated strings. */
int fs_get_children(const TF_Filesystem* filesystem, const char* path,
                           char*** entries, TF_Status* status) {
  char* block = NULL;
  int count, i;
  const char* name;
  if (!ready(status)) return -1;
  count = cb.list(status, path, &block);
  if (TF_GetCode(status) != TF_OK || count < 0) {
    free(block);
    return -1;
  }
  *entries = (char**)plugin_memory_allocate((size_t)(count > 0 ? count : 1) * sizeof(char*));
  name = block;
  for (i = 0; i < count; i++) {
    size_t len = strlen(name);
    (*entries)[i] = (char*)plugin_memory_allocate(len + 1);
    memcpy((*entries)[i], name, len + 1);
    name += len + 1;
  }
  free(block);
  return count;
}

void provide(TF_FilesystemPluginOps* ops, const char* scheme) {
  TF_SetFilesystemVersionMetadata(ops);
  ops->scheme = (char*)plugin_memory_allocate(strlen(scheme) + 1);
  memcpy(ops->scheme, scheme, strlen(scheme) + 1);

  ops->random_access_file_ops = (TF_RandomAccessFileOps*)plugin_memory_allocate(
      TF_RANDOM_ACCESS_FILE_OPS_SIZE);
  ops->random_access_file_ops->cleanup = raf_cleanup;
  ops->random_access_file_ops->read = raf_read;

  ops->writable_file_ops =
      (TF_WritableFileOps*)plugin_memory_allocate(TF_WRITABLE_FILE_OPS_SIZE);
  ops->writable_file_ops->cleanup = wf_cleanup;
  ops->writable_file_ops->append = wf_append;
  ops->writable_file_ops->tell = wf_tell;
  ops->writable_file_ops->flush = wf_flush;
  ops->writable_file_ops->sync = wf_sync;
  ops->writable_file_ops->close = wf_close;

  ops->filesystem_ops = (TF_FilesystemOps*)plugin_memory_allocate(TF_FILESYSTEM_OPS_SIZE);
  ops->filesystem_ops->init = fs_init;
  ops->filesystem_ops->cleanup = fs_cleanup;
  ops->filesystem_ops->new_random_access_file = fs_new_random_access_file;
  ops->filesystem_ops->new_writable_file = fs_new_writable_file;
  ops->filesystem_ops->new_appendable_file = fs_new_appendable_file;
  ops->filesystem_ops->create_dir = fs_create_dir;
  ops->filesystem_ops->recursively_create_dir = fs_recursively_create_dir;
  ops->filesystem_ops->delete_file = fs_delete_file;
  ops->filesystem_ops->delete_dir = fs_delete_dir;
  ops->filesystem_ops->delete_recursively = fs_delete_recursively;
  ops->filesystem_ops->rename_file = fs_rename_file;
  ops->filesystem_ops->path_exists = fs_path_exists;
  ops->filesystem_ops->stat = fs_stat;
  ops->filesystem_ops->is_directory = fs_is_directory;
  ops->filesystem_ops->get_file_size = fs_get_file_size;
  ops->filesystem_ops->get_children = fs_get_children;
}

}  // namespace

/* TensorFlow calls this when it loads the library. */
TF_CAPI_EXPORT extern "C" void TF_InitPlugin(TF_FilesystemPluginInfo* info) {
  static const char* schemes[] = {"hdfs", "viewfs"};
  size_t i;
  info->plugin_memory_allocate = plugin_memory_allocate;
  info->plugin_memory_free = plugin_memory_free;
  info->num_schemes = sizeof(schemes) / sizeof(schemes[0]);
  info->ops = (TF_FilesystemPluginOps*)plugin_memory_allocate(info->num_schemes *
                                                              sizeof(TF_FilesystemPluginOps));
  for (i = 0; i < info->num_schemes; i++) provide(&info->ops[i], schemes[i]);
}
