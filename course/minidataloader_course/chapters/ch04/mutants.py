"""Chapter 4: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

MUTANTS = [
    m("default_collate", "returns a plain dict for any mapping",
      [("        collated = copy.copy(elem)  # the same type: a dict, an OrderedDict, ...\n"
        "        collated.update({key: default_collate([sample[key] for sample in batch])\n"
        "                         for key in elem})\n        return collated",
        "        return {key: default_collate([sample[key] for sample in batch]) for key in elem}")],
      "a mapping keeps its type", "OrderedDict", breaks=6),
    m("default_collate", "cannot collate numpy numbers",
      [("    if isinstance(elem, (np.bool_, np.number)):  # numpy numbers: their own dtype\n"
        "        return torch.as_tensor(batch)\n", "")],
      "numpy numbers become one tensor", breaks=2),
    m("default_collate", "turns Python floats into float32",
      [("return torch.tensor(batch, dtype=torch.float64)", "return torch.tensor(batch)")],
      "float64", breaks=3),
    m("default_collate", "lets zip cut samples of different lengths",
      [("        if any(len(sample) != len(elem) for sample in batch):\n"
        "            raise RuntimeError(\"every sample must have the same number of fields\")\n", "")],
      "raise RuntimeError", breaks=5),
    m("default_collate", "checks for tuples before namedtuples",
      [("    if isinstance(elem, tuple) and hasattr(elem, \"_fields\"):  # a namedtuple\n"
        "        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))\n", "")],
      "a namedtuple keeps its type", breaks=7),
    m("default_collate", "concatenates tensors instead of stacking them",
      [("return torch.stack(batch)  # a new first dimension: the batch", "return torch.cat(batch)")],
      "shape", breaks=1),
    m("default_collate", "puts the strings in a numpy array",
      [("return batch  # no tensor holds text: a list of the batch's strings", "return np.array(batch)")],
      "list", breaks=4),
    m("default_collate", "gives the strings back as a tuple",
      [("return batch  # no tensor holds text: a list of the batch's strings", "return tuple(batch)")],
      "tuple", breaks=4),
    m("default_collate", "hands an unknown type back instead of raising TypeError",
      [('raise TypeError(f"cannot collate samples of type {type(elem).__name__}")', "return batch")],
      "TypeError", breaks=8),
    m("default_convert", "returns a plain dict for any mapping",
      [("        converted = copy.copy(data)  # the same type: a dict, an OrderedDict, ...\n"
        "        converted.update({key: default_convert(value) for key, value in data.items()})\n"
        "        return converted",
        "        return {key: default_convert(value) for key, value in data.items()}")],
      "a mapping keeps its type", breaks=5),
    m("default_convert", "converts only numpy arrays, not numpy numbers",
      [("(np.ndarray, np.bool_, np.number)", "np.ndarray")],
      "numpy numbers", breaks=1),
    m("default_convert", "tries to make a tensor of an array of strings",
      [("    if isinstance(data, np.ndarray) and data.dtype.kind in \"SUO\":\n"
        "        return data  # strings or objects: no tensor can hold them\n", "")],
      "array of strings", breaks=2),
    m("default_convert", "turns Python numbers into tensors too",
      [("(np.ndarray, np.bool_, np.number)", "(np.ndarray, np.bool_, np.number, int, float)")],
      "left as they are", breaks=3),
    m("default_convert", "keeps tuples as tuples",
      [("    if isinstance(data, (tuple, list)):\n        return [default_convert(item) for item in data]",
        "    if isinstance(data, (tuple, list)):\n        return type(data)(default_convert(item) for item in data)")],
      "a tuple becomes a LIST", breaks=4),
    m("pad_collate", "pads with float zeros whatever the dtype",
      [("padded = first.new_zeros((len(batch), longest, *first.shape[1:]))",
        "padded = torch.zeros((len(batch), longest, *first.shape[1:]))")],
      "keeps the int64 dtype", breaks=2),
    m("pad_collate", "returns a list",
      [("return padded, lengths, labels", "return [padded, lengths, labels]")],
      "expected a tuple", breaks=1),
    m("pad_collate", "pads with ones",
      [("first.new_zeros(", "first.new_ones(")],
      "pad every sequence with zeros", breaks=1),
    m("collate_dataclass", "does not pass collate_fn_map on",
      [("collate(values, collate_fn_map=collate_fn_map)", "collate(values)")],
      "passing the registry on", breaks=1),
    m("collate_dataclass", "returns a dict of fields",
      [("return type(first)(**fields)", "return fields")],
      "DigitSample", breaks=1),
    m("collate_dataclass", "reads the fields with dataclasses.asdict (which turns inner dataclasses into dicts)",
      [("values = [getattr(sample, field.name) for sample in batch]",
        "values = [dataclasses.asdict(sample)[field.name] for sample in batch]")],
      "DigitPair", breaks=2),
    m("FastTableDataset", "calls __getitem__ for every index",
      [("        features = self.features[indices]  # one gather for the whole batch\n"
        "        labels = self.labels[indices]\n"
        "        return list(zip(features, labels))  # still a list of (features, label) samples",
        "        return [self[i] for i in indices]")],
      "calls while the loader made that batch", breaks=2),
    m("FastTableDataset", "returns the two batch tensors, not a list of samples",
      [("return list(zip(features, labels))", "return features, labels")],
      "a list of (features, label) tuples", breaks=1),
]
