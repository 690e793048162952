// Intentionally empty: CListSyncLinux only re-exports system headers (see include/CListSyncLinux.h).
#include "CListSyncLinux.h"
