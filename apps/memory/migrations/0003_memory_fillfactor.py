"""Room in each page for the row versions ``ask``'s reinforcement writes.

Every memory ``ask`` returns is updated (access count, last accessed, decay). With full pages the new
row version lands on another page, so every index entry (the HNSW one included) is written again;
with 30 % free space Postgres can keep it on the same page as a heap-only tuple, and none of the
updated columns is indexed, so no index is touched (bench/memory.py: the reinforcing UPDATE of 10
rows went from 6.9 ms to 1.2 ms). Existing pages take the setting as they are rewritten.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_decay_interval")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_memory SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE memory_memory RESET (fillfactor)",
        )
    ]
