"""Hadoop's ``SecureIOUtils`` for a Kerberized sandbox whose NodeManagers have no libhadoop.

In secure mode a NodeManager opens container logs (to aggregate them, and to
serve them on its web API) through ``org.apache.hadoop.io.SecureIOUtils``,
which refuses to load without Hadoop's native library (not among Maven's
jars: the NodeManager dies at the first log aggregation) and checks that each
file belongs to the application's user. With the DefaultContainerExecutor the
files belong to the NodeManager's own user, so even libhadoop would refuse
them. The sandbox therefore compiles this replacement (the same public
methods, in Java only; the owner check accepts the application's user or the
daemon's) and puts it first on the NodeManagers' class path.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tfyarn_sandbox.config import SandboxError

SOURCE = """\
package org.apache.hadoop.io;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/** The tfyarn sandbox's SecureIOUtils: no native code; files of the daemon's user pass. */
public class SecureIOUtils {
  private static final String DAEMON_USER = System.getProperty("user.name");
  private static final FileSystem rawFilesystem;

  static {
    try {
      rawFilesystem = FileSystem.getLocal(new Configuration()).getRaw();
    } catch (IOException e) {
      throw new RuntimeException("Couldn't obtain an instance of RawLocalFileSystem.");
    }
  }

  public static RandomAccessFile openForRandomRead(
      File f, String mode, String expectedOwner, String expectedGroup) throws IOException {
    checkOwner(f, expectedOwner);
    return new RandomAccessFile(f, mode);
  }

  protected static RandomAccessFile forceSecureOpenForRandomRead(
      File f, String mode, String expectedOwner, String expectedGroup) throws IOException {
    return openForRandomRead(f, mode, expectedOwner, expectedGroup);
  }

  public static FSDataInputStream openFSDataInputStream(
      File file, String expectedOwner, String expectedGroup) throws IOException {
    checkOwner(file, expectedOwner);
    return rawFilesystem.open(new Path(file.getAbsolutePath()));
  }

  protected static FSDataInputStream forceSecureOpenFSDataInputStream(
      File file, String expectedOwner, String expectedGroup) throws IOException {
    return openFSDataInputStream(file, expectedOwner, expectedGroup);
  }

  public static FileInputStream openForRead(File f, String expectedOwner, String expectedGroup)
      throws IOException {
    checkOwner(f, expectedOwner);
    return new FileInputStream(f);
  }

  protected static FileInputStream forceSecureOpenForRead(
      File f, String expectedOwner, String expectedGroup) throws IOException {
    return openForRead(f, expectedOwner, expectedGroup);
  }

  public static FileOutputStream createForWrite(File f, int permissions) throws IOException {
    if (f.exists()) {
      throw new AlreadyExistsException("File " + f + " already exists");
    }
    FileOutputStream fos = new FileOutputStream(f);
    boolean success = false;
    try {
      rawFilesystem.setPermission(
          new Path(f.getAbsolutePath()), new FsPermission((short) permissions));
      success = true;
      return fos;
    } finally {
      if (!success) {
        fos.close();
      }
    }
  }

  private static void checkOwner(File f, String expectedOwner) throws IOException {
    if (expectedOwner == null) {
      return;
    }
    String owner = Files.getOwner(f.toPath()).getName();
    if (!owner.equals(expectedOwner) && !owner.equals(DAEMON_USER)) {
      throw new IOException("Owner '" + owner + "' for path " + f
          + " did not match expected owner '" + expectedOwner + "'");
    }
  }

  public static class AlreadyExistsException extends IOException {
    private static final long serialVersionUID = 1L;

    public AlreadyExistsException(String msg) {
      super(msg);
    }

    public AlreadyExistsException(Throwable cause) {
      super(cause);
    }
  }
}
"""


def classes_dir(root: Path) -> Path:
    """The folder the NodeManagers put first on their class path."""
    return root / "secureio" / "classes"


def build(root: Path, java_home: Path, lib: Path) -> Path:
    """Compile :data:`SOURCE` into :func:`classes_dir` (again only when it changed)."""
    out = classes_dir(root)
    stamp = out / ".source-sha256"
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return out
    src = root / "secureio" / "src" / "SecureIOUtils.java"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(SOURCE)
    out.mkdir(parents=True, exist_ok=True)
    javac = java_home / "bin" / "javac"
    cmd = [str(javac), "-nowarn", "-cp", f"{lib}/*", "-d", str(out), str(src)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise SandboxError(f"--kerberos needs a JDK with javac (not found at {javac})") from None
    if proc.returncode != 0:
        raise SandboxError(f"compiling the sandbox's SecureIOUtils failed: {proc.stderr[-2000:]}")
    stamp.write_text(digest)
    return out
