package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf firewall firewall.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86" -target bpfel -go-package bpf -type event conntrack conntrack.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86" -target bpfel -go-package bpf activity activity.c
