"""Slots in words: the label a stated fact's memory carries (``user.pet.cat.name`` →
``用户的猫的名字``) and back. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["slot_label", "slot_of_label"]

_SPECIES_LABEL = {"cat": "猫", "dog": "狗", "rabbit": "兔子", "hamster": "仓鼠", "parrot": "鹦鹉",
                  "fish": "鱼", "turtle": "乌龟", "bird": "鸟"}  # fmt: skip
_RELATION_LABEL = {
    "mother": "妈妈", "father": "爸爸", "sister": "姐妹", "brother": "兄弟", "wife": "妻子",
    "husband": "丈夫", "son": "儿子", "daughter": "女儿", "girlfriend": "女朋友",
    "boyfriend": "男朋友", "grandma": "奶奶/外婆", "grandpa": "爷爷/外公", "roommate": "室友",
    "best friend": "好朋友", "partner": "伴侣", "parents": "父母", "family": "家人",
    "cousin": "表亲", "uncle": "叔舅", "aunt": "姑姨",
}  # fmt: skip
_LABELS = {
    "user.name": "用户的名字", "user.nickname": "用户希望被叫作", "user.age": "用户的年龄",
    "user.birthday": "用户的生日", "user.home_city": "用户现在住的城市",
    "user.hometown": "用户的老家", "user.job": "用户的职业", "user.workplace": "用户工作的地方",
    "user.schedule": "用户的班次", "user.school": "用户的学校", "user.likes": "用户喜欢",
    "user.dislikes": "用户不喜欢", "user.allergy": "用户过敏", "user.vet": "用户的兽医",
    "user.doctor": "用户的医生", "user.dentist": "用户的牙医", "user.therapist": "用户的心理医生",
    "user.roommate": "用户的室友", "user.boss": "用户的老板", "user.phone": "用户的手机",
    "user.car": "用户的车", "user.gym": "用户运动健身的地方", "user.major": "用户的专业",
}  # fmt: skip


def slot_label(slot: str) -> str:
    """The slot in words, as the prompt shows it."""
    if slot in _LABELS:
        return _LABELS[slot]
    parts = slot.split(".")
    if slot.startswith("user.pet.") and len(parts) == 4:
        return f"用户的{_SPECIES_LABEL.get(parts[2], parts[2])}{_PET_FIELD.get(parts[3], '的名字')}"
    if slot.startswith("user.family.") and len(parts) >= 4:
        rel = ".".join(parts[2:-1])
        return f"用户的{_RELATION_LABEL.get(rel, rel)}{_FAMILY_FIELD.get(parts[-1], '的名字')}"
    if slot.startswith("user.favourite."):
        return f"用户最喜欢的{slot.removeprefix('user.favourite.')}"
    if slot.startswith("user.plan."):
        return f"用户的安排·{slot.removeprefix('user.plan.')}"
    if slot.startswith("user.promise."):
        return f"用户的承诺·{slot.removeprefix('user.promise.')}"
    if slot.startswith("user.event."):
        return f"用户的经历·{slot.removeprefix('user.event.')}"
    return "用户的" + slot.removeprefix("user.")


_FAMILY_FIELD = {"birthday": "的生日", "job": "的职业", "home_city": "住的城市"}
"""What a relative's fact is about, after the relative (``user.family.<relation>.<field>``; a
name, ``的名字``, is read back with the pets'). Labels and slots are both made from this table."""
_PET_FIELD = {"name": "的名字", "breed": "的品种"}
"""What a pet's fact is about (``user.pet.<species>.<field>``)."""
_SLOT_OF_LABEL = {label: slot for slot, label in _LABELS.items()}
_DYNAMIC_LABELS: tuple[tuple[re.Pattern[str], Callable[[str], str]], ...] = (
    *(
        (
            re.compile(f"^用户的(.+){suffix}$"),
            lambda k, field=field: f"user.family.{_RELATION_OF_LABEL.get(k, k)}.{field}",
        )
        for field, suffix in _FAMILY_FIELD.items()
    ),
    (
        re.compile(r"^用户的(.+)的品种$"),
        lambda k: f"user.pet.{_SPECIES_OF_LABEL.get(k, k)}.breed",
    ),
    (
        re.compile(r"^用户的(.+)的名字$"),
        lambda k: (
            f"user.pet.{_SPECIES_OF_LABEL[k]}.name"
            if k in _SPECIES_OF_LABEL
            else f"user.family.{_RELATION_OF_LABEL.get(k, k)}.name"
        ),
    ),
    (re.compile(r"^用户最喜欢的(.+)$"), lambda k: f"user.favourite.{k}"),
    (re.compile(r"^用户的安排·(.+)$"), lambda k: f"user.plan.{k}"),
    (re.compile(r"^用户的承诺·(.+)$"), lambda k: f"user.promise.{k}"),
    (re.compile(r"^用户的经历·(.+)$"), lambda k: f"user.event.{k}"),
    (re.compile(r"^用户的(.+)$"), lambda k: f"user.{k}"),
)
_SPECIES_OF_LABEL = {label: species for species, label in _SPECIES_LABEL.items()}
_RELATION_OF_LABEL = {label: rel for rel, label in _RELATION_LABEL.items()}


def slot_of_label(label: str) -> str | None:
    """The slot a label names (the inverse of :func:`slot_label`), None for another title."""
    if label in _SLOT_OF_LABEL:
        return _SLOT_OF_LABEL[label]
    for pattern, slot in _DYNAMIC_LABELS:
        m = pattern.match(label)
        if m:
            return slot(m.group(1))
    return None
