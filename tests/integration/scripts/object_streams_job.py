"""Objects read by clients whose bytes pass through neither urllib3 nor aiohttp (run under
``tb-iotrace run``; no tb_iotrace code here):

    object_streams_job.py gopen URL...        each URL read to its end with webdataset.gopen
    object_streams_job.py wds URL...          a WebDataset of the shards, 2 DataLoader workers
    object_streams_job.py s3t ENDPOINT PREFIX an S3MapDataset of s3://PREFIX, 2 DataLoader workers

Prints a JSON line: bytes read per URL (gopen), samples and bytes (wds, s3t).
"""
import json
import sys


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "gopen":
        from webdataset.gopen import gopen

        sizes = {}
        for url in args:
            with gopen(url, "rb") as f:
                sizes[url] = len(f.read())
        print(json.dumps({"sizes": sizes}))
        return
    import torch

    if mode == "wds":
        import webdataset as wds

        ds = wds.WebDataset(args, shardshuffle=False, workersplitter=wds.split_by_worker)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
        n = b = 0
        for sample in dl:
            n += 1
            b += len(sample["bin"])
        print(json.dumps({"samples": n, "bytes": b}))
        return
    from s3torchconnector import S3ClientConfig, S3MapDataset

    endpoint, prefix = args
    ds = S3MapDataset.from_prefix(f"s3://{prefix}", region="us-east-1", endpoint=endpoint,
                                  s3client_config=S3ClientConfig(force_path_style=True))
    dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2,
                                     collate_fn=lambda objs: [(o.key, len(o.read())) for o in objs])
    got = dict(kv for batch in dl for kv in batch)
    print(json.dumps({"samples": len(got), "bytes": sum(got.values())}))


if __name__ == "__main__":
    main()
