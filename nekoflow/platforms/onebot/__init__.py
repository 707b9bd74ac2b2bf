"""QQ through OneBot v11 implementations (NapCat, Lagrange, go-cqhttp): gateway and senders."""
