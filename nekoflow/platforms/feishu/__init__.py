"""Feishu (Lark): event decryption and signatures, tenant token, bot info, reply sender."""
