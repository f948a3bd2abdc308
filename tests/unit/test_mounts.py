"""tb_iotrace.analysis.mounts: which file system a path lives on, by the capture's own mount table."""
from __future__ import annotations

from tb_iotrace.analysis.mounts import Mount, MountTable, parse_mountinfo, read_mountinfo

# /proc/<pid>/mountinfo lines (fields: id parent major:minor root mount-point options ... - type source)
MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /data rw,relatime shared:2 - nfs4 fileserver:/export/data rw
31 30 0:41 / /data/scratch rw,relatime - lustre 10.0.0.1@tcp:/scratch rw
32 22 0:42 / /mnt/with\\040space rw - tmpfs tmpfs rw
33 30 0:43 / /data rw,relatime shared:3 - xfs /dev/nvme0n1 rw
"""


def test_longest_mount_point_wins_and_later_mounts_cover_earlier() -> None:
    table = MountTable(parse_mountinfo(MOUNTINFO))
    assert table.lookup("/data/scratch/run1/x.h5").fs_type == "lustre"
    # /data is mounted twice: the later (xfs) is the visible one
    assert table.lookup("/data/train/shard0").fs_type == "xfs"
    assert table.lookup("/home/u/a.npy") == Mount("/", "ext4", "/dev/sda1")
    assert table.lookup("/mnt/with space/f").fs_type == "tmpfs"     # \040 in mountinfo is a space


def test_paths_are_normalised_and_relative_or_unknown_paths_fall_back() -> None:
    table = MountTable(parse_mountinfo(MOUNTINFO))
    assert table.lookup("/data/scratch/../scratch/a").fs_type == "lustre"
    assert table.lookup("relative/name").mount_point == "/"
    empty = MountTable([])
    assert empty.lookup("/x") == Mount("?", "unknown", "") and len(empty) == 0


def test_a_missing_mountinfo_is_an_empty_table(tmp_path) -> None:
    assert read_mountinfo(str(tmp_path / "absent")) == []
    assert read_mountinfo() != []       # this machine's own has at least the root
