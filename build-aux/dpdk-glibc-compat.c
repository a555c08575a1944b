/*
 * Copyright (c) 2026 The ovs-daqring authors.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at:
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

/* The static DPDK 24.11 archives of Debian 13 were compiled against glibc
 * 2.41.  Linked into ovs-vswitchd on an older glibc (Debian 12 has 2.36,
 * EL9 has 2.34), they need the few functions that glibc added since 2.36
 * and that the DPDK objects call.  build-aux/dpdk-prefix lists every
 * undefined symbol of the archives it links and fails if one is missing
 * from both the C library and this file, so this list cannot silently go
 * stale.
 *
 * - __isoc23_strto*() and __isoc23_*scanf(): glibc 2.38 redirects strtol()
 *   and the scanf family to these under _GNU_SOURCE.  They differ from the
 *   C17 functions only in accepting a "0b" prefix for base 2 (and base 0),
 *   which no DPDK caller relies on.
 * - strlcpy(), strlcat() and __strlcpy_chk(): glibc 2.38; BSD semantics. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *, char **, int);
unsigned long __isoc23_strtoul(const char *, char **, int);
unsigned long long __isoc23_strtoull(const char *, char **, int);
long long __isoc23_strtoll(const char *, char **, int);
int __isoc23_sscanf(const char *, const char *, ...);
int __isoc23_fscanf(FILE *, const char *, ...);
int __isoc23_vsscanf(const char *, const char *, va_list);
size_t strlcpy(char *, const char *, size_t);
size_t strlcat(char *, const char *, size_t);
size_t __strlcpy_chk(char *, const char *, size_t, size_t);
size_t __strlcat_chk(char *, const char *, size_t, size_t);

long
__isoc23_strtol(const char *s, char **end, int base)
{
    return strtol(s, end, base);
}

unsigned long
__isoc23_strtoul(const char *s, char **end, int base)
{
    return strtoul(s, end, base);
}

long long
__isoc23_strtoll(const char *s, char **end, int base)
{
    return strtoll(s, end, base);
}

unsigned long long
__isoc23_strtoull(const char *s, char **end, int base)
{
    return strtoull(s, end, base);
}

int
__isoc23_vsscanf(const char *s, const char *format, va_list args)
{
    return vsscanf(s, format, args);
}

int
__isoc23_sscanf(const char *s, const char *format, ...)
{
    va_list args;
    int n;

    va_start(args, format);
    n = vsscanf(s, format, args);
    va_end(args);
    return n;
}

int
__isoc23_fscanf(FILE *stream, const char *format, ...)
{
    va_list args;
    int n;

    va_start(args, format);
    n = vfscanf(stream, format, args);
    va_end(args);
    return n;
}

size_t
strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);

    if (size) {
        size_t n = len < size - 1 ? len : size - 1;

        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

size_t
strlcat(char *dst, const char *src, size_t size)
{
    size_t dlen = strnlen(dst, size);

    if (dlen == size) {
        return size + strlen(src);
    }
    return dlen + strlcpy(dst + dlen, src, size - dlen);
}

size_t
__strlcpy_chk(char *dst, const char *src, size_t size, size_t dstsize)
{
    if (size > dstsize) {
        abort();
    }
    return strlcpy(dst, src, size);
}

size_t
__strlcat_chk(char *dst, const char *src, size_t size, size_t dstsize)
{
    if (size > dstsize) {
        abort();
    }
    return strlcat(dst, src, size);
}
