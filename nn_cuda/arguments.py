"""Argument types for the command lines (argparse `type=`): each checks one kind of value and says
in one line what is wrong with it."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def int_at_least(minimum: int):
    """An argparse type: an integer >= `minimum` (positive_int is int_at_least(1) with its own words)."""
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text}")
        return value

    parse.__name__ = f"integer >= {minimum}"  # argparse names the type so in "invalid ... value"
    return parse


def pixel_radius(text: str) -> float:
    """An L-infinity radius on [0, 1] pixels: a number in [0, 1]."""
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1] (pixels are in [0, 1]), got {text}")
    return value


def one_of(*names: str):
    """An argparse type for an item of a comma-separated list that argparse's `choices` cannot check."""
    def parse(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"choose among {', '.join(names)}, got {text}")
        return text

    return parse


def comma_separated(item_type, allow_empty: bool = False):
    """An argparse type: a comma-separated list, each item converted and checked by `item_type`
    (one of the types above, or int/float). The error names the item at fault."""
    def parse(text: str) -> list:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items and not allow_empty:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        values = []
        for item in items:
            where = f"{item!r} in {text!r}" if len(items) > 1 else repr(item)
            try:
                values.append(item_type(item))
            except argparse.ArgumentTypeError as error:
                raise argparse.ArgumentTypeError(f"{where}: {error}" if len(items) > 1 else str(error)) from None
            except ValueError:
                raise argparse.ArgumentTypeError(f"{where} is not a number") from None
        return values

    return parse
