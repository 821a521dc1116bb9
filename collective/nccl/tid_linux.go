package nccl

import "syscall"

func gettid() int { return syscall.Gettid() }
